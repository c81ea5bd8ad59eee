/**
 * Key schema of ballast's two DynamoDB tables, shared by the code that reads and writes them and
 * by the CDK constructs that create them, so the two can never disagree.
 */
export const STATE_TABLE = {
  /** Partition key: `<entity>#<id>`, e.g. `widget#w-42` (see {@link entityKey}). */
  partitionKey: 'pk',
} as const;

/** The state table's `pk` of one item of `entity`: `<entity>#<id>`. */
export function entityKey(entity: string, id: string): string {
  return `${entity}#${id}`;
}

export const CONTROL_TABLE = {
  /** Partition key: `idem#<idempotency key>` or `lock#<resource id>`. */
  partitionKey: 'pk',
  /** DynamoDB TTL attribute: garbage collection only, never relied on for correctness. */
  ttlAttribute: 'expiresAtEpochSeconds',
} as const;
