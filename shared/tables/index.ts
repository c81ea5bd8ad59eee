export { CONTROL_TABLE, entityKey, STATE_TABLE } from './schema.ts';
