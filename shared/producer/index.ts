/**
 * The producer SDK: job builders typed by the registered workloads' job types, envelope creation,
 * size checks, FIFO ids and batch sends that retry only the failed entries.
 */
export { InvalidJobError, MessageTooLargeError, ProducerConfigurationError, ProducerError, type ProducerErrorOptions } from './errors.ts';
export { messageDeduplicationId, messageGroupId, sqsSafeId } from './fifo.ts';
export { JobProducer, type JobProducerOptions } from './job-producer.ts';
export { parseJobLines, type ParsedJobLine, type ParsedJobLines, type ParseJobLinesOptions } from './job-lines.ts';
export { buildJob, jobBuilder, type JobBuilder, type JobCommon, type JobInput, type JobRequest } from './jobs.ts';
export { defineJobTypes, type JobCatalog, type JobType } from '../workloads/job-types.ts';
export { sendEnvelopes, sizedBatches, type FailedJob, type SendOptions, type SendProgress, type SendResult, type SentJob } from './send.ts';
export { assertMessageSize, DEFAULT_MAX_MESSAGE_BYTES, messageSizeBytes } from './size.ts';
export { endFailed, endSent, startProduce, tracedEntryFields, type ProduceTrace } from './trace.ts';
