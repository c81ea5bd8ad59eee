export {
  IdempotencyStore, type Claim, type ClaimOutcome, type CommitOnceOptions, type CommitPlan, type Completion, type IdempotencyStoreOptions,
} from './store.ts';
export type { ScreenedRecords } from './screen.ts';
export { payloadHash, recordKey, STATUS, type IdempotencyRecord, type JobIdentity } from './record.ts';
export type { BusinessWrite } from './business-writes.ts';
export type { GroupCommitOptions } from './group-commit.ts';
