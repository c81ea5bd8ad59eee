/**
 * `@ballast-stack/ballast`: the runtime a team's workloads are written with — declaring workloads,
 * their job types, handlers and cached entities; the batch pipeline and the idempotency store it
 * runs on; the typed errors jobs fail with; the external-call helper. Producers import
 * `@ballast-stack/ballast/producer`, CDK apps `@ballast-stack/ballast/cdk`.
 *
 * @example
 * import { defineJobTypes, defineWorkload, FatalError } from '@ballast-stack/ballast';
 */
export {
  defineJobs, defineJobTypes, defineRegistry, defineWorkload, jobResources, workloadCatalog, workloadEntities, workloadJobs, workloadSettings,
  type CatalogOf, type JobCatalog, type JobType, type Registry, type Workload, type WorkloadJobs, type WorkloadReason, type WorkloadRuntime,
} from './workloads/index.ts';
export { defineEntity, projectItem, type CachedEntity, type CachedValue } from './cache/entity.ts';
export { sqsJobBatch, type ExternalJob, type JobContext, type JobHandler, type SqsJobBatchOptions, type TransactionalJob } from './batch/index.ts';
export {
  IdempotencyStore, type BusinessWrite, type Claim, type ClaimOutcome, type CommitOnceOptions, type CommitPlan, type Completion, type IdempotencyStoreOptions,
} from './idempotency/index.ts';
export {
  BallastError, classify, FatalError, FencedError, InvalidEnvelopeError, IncompatibleVersionError, IdempotencyKeyReusedError, JobInProgressError,
  LockBusyError, REASONS, RequestRejectedError, requestRejected, TransientError, type BallastErrorOptions, type FrameworkReason, type Reason,
} from './errors/index.ts';
export { callExternalApi, type ExternalCall } from './external/index.ts';
export { createObservability, type Observability } from './observability/index.ts';
export { CONTROL_TABLE, entityKey, STATE_TABLE } from './tables/index.ts';
export {
  createEnvelope, CURRENT_SCHEMA_VERSION, ENVELOPE_V1, parseEnvelope, SUPPORTED_MAJOR_VERSIONS, type Envelope, type EnvelopeInput,
} from './envelope/index.ts';
