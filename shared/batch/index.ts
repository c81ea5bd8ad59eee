export { sqsJobBatch, type SqsJobBatchOptions } from './middleware.ts';
export { processBatch, type ProcessBatchOptions } from './process-batch.ts';
export { runJob, type RunJobOptions } from './run-job.ts';
export { backoffSeconds, canRequeue, deadLetterMessage, LOCK_WAIT_SINCE_ATTRIBUTE, lockWaitSeconds, requeuedMessage, retryDelaySeconds, type BackoffOptions } from './disposition.ts';
export type { ExternalJob, JobContext, JobHandler, RecordOutcome, TransactionalJob } from './types.ts';
