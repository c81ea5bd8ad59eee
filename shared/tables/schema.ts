/**
 * Key schema of ballast's two DynamoDB tables, shared by the code that reads and writes them and
 * by the CDK constructs that create them, so the two can never disagree.
 */
export const STATE_TABLE = {
  /** Partition key: `<entity>#<id>`, e.g. `account#acc-42`. */
  partitionKey: 'pk',
} as const;

export const CONTROL_TABLE = {
  /** Partition key: `idem#<idempotency key>` or `lock#<resource id>`. */
  partitionKey: 'pk',
  /** DynamoDB TTL attribute: garbage collection only, never relied on for correctness. */
  ttlAttribute: 'expiresAtEpochSeconds',
} as const;
