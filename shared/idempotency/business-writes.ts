import type { BallastError } from '../errors/index.ts';
import type { TransactItem } from '../lock/index.ts';
import { activeTraceparent, TRACE_ATTRIBUTE } from '../tracing/index.ts';

/** A business write that commits in the same transaction as the idempotency record. */
export interface BusinessWrite {
  /** One transaction item in document form (Put, Update, Delete or ConditionCheck). */
  readonly item: TransactItem;
  /** The error to raise when this item's condition fails, given the item as it was (if any). */
  readonly onConditionFailed: (current: Record<string, unknown> | undefined) => BallastError;
}

/**
 * The business writes as transaction items: each returns the item it was refused on, and each
 * Put or Update stamps the item with the committing span's `traceparent` (when one is traced), so
 * the stream hands the invalidator the trace of the job that wrote it.
 */
export function businessItems(writes: readonly BusinessWrite[]): TransactItem[] {
  const traceparent = activeTraceparent();
  return writes.map((write) => (traceparent ? withTraceparent(withOldItem(write), traceparent) : withOldItem(write)));
}

/** Adds `TRACE_ATTRIBUTE = traceparent` to a Put's item or an Update's SET clause; other kinds are left as they are. */
export function withTraceparent(item: TransactItem, traceparent: string): TransactItem {
  if (item.Put) return { Put: { ...item.Put, Item: { ...item.Put.Item, [TRACE_ATTRIBUTE]: traceparent } } };
  if (!item.Update) return item;
  const expression = item.Update.UpdateExpression ?? '';
  // SET is a reserved word, so as a bare token it can only be the clause keyword.
  const set = /\bSET\b/i;
  return {
    Update: {
      ...item.Update,
      UpdateExpression: set.test(expression) ? expression.replace(set, 'SET #ballastTrace = :ballastTrace,') : `${expression} SET #ballastTrace = :ballastTrace`.trim(),
      ExpressionAttributeNames: { ...item.Update.ExpressionAttributeNames, '#ballastTrace': TRACE_ATTRIBUTE },
      ExpressionAttributeValues: { ...item.Update.ExpressionAttributeValues, ':ballastTrace': traceparent },
    },
  };
}

/** A conditional business write returns the item it was refused on, for its `onConditionFailed`. */
function withOldItem(write: BusinessWrite): TransactItem {
  const [kind, body] = Object.entries(write.item)[0] as [string, { ConditionExpression?: string }];
  // Without a condition the write cannot be refused (only cancelled with the others): nothing to return.
  if (!body.ConditionExpression) return write.item;
  return { [kind]: { ...body, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } } as TransactItem;
}
