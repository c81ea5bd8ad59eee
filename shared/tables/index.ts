export { CONTROL_TABLE, STATE_TABLE } from './schema.ts';
