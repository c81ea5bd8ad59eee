export {
  IdempotencyStore, type BusinessWrite, type Claim, type ClaimOutcome, type CommitPlan, type Completion, type IdempotencyStoreOptions,
} from './store.ts';
export { payloadHash, recordKey, STATUS, type IdempotencyRecord, type JobIdentity } from './record.ts';
