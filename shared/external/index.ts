/** Calls from external jobs to idempotent, fenced APIs. */
export { callExternalApi, type ExternalCall } from './call.ts';
