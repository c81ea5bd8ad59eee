/**
 * Operating a ballast stack, as library functions: find the stack (local cloud or CloudFormation
 * outputs), read its queues, DLQ, control table, metrics and cache, and the incident checklist.
 * The `ballast` CLI is a thin layer of commands over these.
 */
export { resolveStack, type StackTarget } from './discovery.ts';
export { createContext, closeContext, type OpsContext, type ClientOverrides } from './context.ts';
export { StackUnreachableError } from './errors.ts';
export { runDoctor, type DoctorReport } from './doctor/index.ts';
export { gatherStatus, type StackStatus } from './status.ts';
export { listDeadLetters, redriveAll, replayDeadLetters } from './dlq.ts';
export { checkCache } from './cache.ts';
export {
  findTraces, recentTracedJobs, formatTraces, layoutTrace, normalizeTraceId, TracesUnavailableError, TRACES_URL_VARIABLE,
  type SpanRecord, type TraceView, type TraceQueryResult, type TraceLayout, type TraceRow, type RecentJob,
} from './traces.ts';
