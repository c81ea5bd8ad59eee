import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { marshall } from '@aws-sdk/util-dynamodb';
import { acquireLockItem, extendLockItem, lockWriteOf, releaseLockItem, type LeaseHold, type TransactItem } from '../../shared/lock/index.ts';
import { fenceWatch } from '../../local/faults/index.ts';

const TABLE = 'control';
const hold = (fence: number, resourceId = 'r-1'): LeaseHold => ({ resourceId, ownerToken: `owner-${fence}`, fence });

/** A transaction as it crosses the wire: attribute values in DynamoDB's JSON. */
function wire(items: readonly TransactItem[], token: string) {
  return {
    ClientRequestToken: token,
    TransactItems: items.map((item) => Object.fromEntries(Object.entries(item).map(([how, operation]) => {
      const { Key, Item, ExpressionAttributeValues, ...rest } = operation as unknown as Record<string, Record<string, unknown> | undefined>;
      return [how, {
        ...rest, ...(Key ? { Key: marshall(Key) } : {}), ...(Item ? { Item: marshall(Item) } : {}),
        ...(ExpressionAttributeValues ? { ExpressionAttributeValues: marshall(ExpressionAttributeValues) } : {}),
      }];
    }))),
  };
}

/** (forwarded at `sentAtMs`, by default long after every lease these tests write) */
const exchange = (items: readonly TransactItem[], token: string, sentAt: number, answeredAt: number, refusedAt?: number, sentAtMs = 100_000) => ({
  operation: 'TransactWriteItems', request: wire(items, token), sentAt, answeredAt, sentAtMs,
  status: refusedAt === undefined ? 200 : 400,
  answerBody: Buffer.from(JSON.stringify(refusedAt === undefined ? {} : { CancellationReasons: items.map((_, i) => ({ Code: i === refusedAt ? 'ConditionalCheckFailed' : 'None' })) })),
});

describe('lockWriteOf', () => {
  it('recognises each lock write the builders make, and nothing else', () => {
    assert.deepEqual(lockWriteOf(acquireLockItem(TABLE, hold(7), 1_000, 500)), { kind: 'acquire', resourceId: 'r-1', fence: 7, leaseUntilMs: 1_000 });
    assert.deepEqual(lockWriteOf(extendLockItem(TABLE, hold(7), 2_000)), { kind: 'extend', resourceId: 'r-1', fence: 7, leaseUntilMs: 2_000 });
    assert.deepEqual(lockWriteOf(releaseLockItem(TABLE, hold(7))), { kind: 'release', resourceId: 'r-1', fence: 7, leaseUntilMs: 0 });
    assert.equal(lockWriteOf({ Put: { TableName: TABLE, Item: { pk: 'lock#r-1', fence: 7 } } }), undefined);
    assert.equal(lockWriteOf({ Update: { TableName: TABLE, Key: { pk: 'idem#k' }, UpdateExpression: 'SET fence = :fence', ExpressionAttributeValues: { ':fence': 7 } } }), undefined);
  });
});

describe('fence watch', () => {
  it('orders by the proxy\'s ticks: a write sent before a newer acquisition was answered is not stale; one sent after is', () => {
    const watch = fenceWatch();
    watch.observe(exchange([acquireLockItem(TABLE, hold(100), 1_000, 0)], 'a', 1, 2));
    // Sent at tick 3, before the newer acquisition's answer at tick 5: DynamoDB may have applied it first.
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 1_000, 0)], 'b', 4, 5));
    watch.observe(exchange([releaseLockItem(TABLE, hold(100))], 'c', 3, 6));
    assert.deepEqual(watch.report().staleWritesApplied, []);
    watch.observe(exchange([extendLockItem(TABLE, hold(100), 2_000)], 'd', 7, 8));
    assert.deepEqual(watch.report().staleWritesApplied, ['extend of r-1 for fence 100 landed after fence 200 had taken it']);
  });

  it('counts a stale write refused by its own condition, not one refused for another item', () => {
    const watch = fenceWatch();
    watch.observe(exchange([acquireLockItem(TABLE, hold(100), 1_000, 0)], 'a', 1, 2));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 1_000, 0)], 'b', 3, 4));
    const commit = [{ Put: { TableName: TABLE, Item: { pk: 'idem#k' } } }, releaseLockItem(TABLE, hold(100))];
    watch.observe(exchange(commit, 'c', 5, 6, 0));
    watch.observe(exchange(commit, 'd', 7, 8, 1));
    assert.deepEqual([watch.report().staleWritesRefused, watch.report().staleWritesApplied], [1, []]);
    assert.equal(watch.report().acquisitions, 2);
  });

  it('an acquisition whose fence did not grow, and a lock item written in a shape the lock module does not make, are reported', () => {
    const watch = fenceWatch();
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 1_000, 0)], 'a', 1, 2));
    watch.observe(exchange([acquireLockItem(TABLE, hold(150), 1_000, 0)], 'b', 3, 4));
    watch.observe(exchange([{ Delete: { TableName: TABLE, Key: { pk: 'lock#r-1' } } }], 'c', 5, 6));
    watch.observe({ operation: 'DeleteItem', request: { TableName: TABLE, Key: marshall({ pk: 'lock#r-2' }) }, sentAt: 7, answeredAt: 8, sentAtMs: 0, status: 200, answerBody: Buffer.from('{}') });
    // (other items and reads are none of its business)
    watch.observe({ operation: 'DeleteItem', request: { TableName: TABLE, Key: marshall({ pk: 'idem#k' }) }, sentAt: 9, answeredAt: 10, sentAtMs: 0, status: 200, answerBody: Buffer.from('{}') });
    assert.deepEqual(watch.report().staleWritesApplied, [
      'acquire of r-1 with fence 150 landed after fence 200: the fence did not grow',
      'Delete of lock#r-1: a lock write the lock module does not make, which the fence watch cannot judge',
      'DeleteItem of lock#r-2: a lock write the lock module does not make, which the fence watch cannot judge',
    ]);
  });

  it('a refusal sent again with its token is counted once', () => {
    const watch = fenceWatch();
    watch.observe(exchange([acquireLockItem(TABLE, hold(100), 1_000, 0)], 'a', 1, 2));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 1_000, 0)], 'b', 3, 4));
    watch.observe(exchange([releaseLockItem(TABLE, hold(100))], 'late', 5, 6, 0));
    watch.observe(exchange([releaseLockItem(TABLE, hold(100))], 'late', 7, 8, 0));
    assert.equal(watch.report().staleWritesRefused, 1);
  });

  it('a retry with a token DynamoDB already applied is answered, not applied again: not stale', () => {
    const watch = fenceWatch();
    watch.observe(exchange([acquireLockItem(TABLE, hold(100), 1_000, 0)], 'a', 1, 2));
    watch.observe(exchange([releaseLockItem(TABLE, hold(100))], 'release', 3, 4));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 1_000, 0)], 'b', 5, 6));
    // The release's answer was lost; the SDK sent it again with its token.
    watch.observe(exchange([releaseLockItem(TABLE, hold(100))], 'release', 7, 8));
    assert.deepEqual(watch.report().staleWritesApplied, []);
  });

  it("a lock taken while its holder's lease was live is a live takeover (even with the holder's heartbeat still in flight); after the lease ended, or after a release (even one in flight beside it), it is not", () => {
    const watch = fenceWatch();
    // r-1: held until 1_000, taken at 1_500 (the lease had ended)
    watch.observe(exchange([acquireLockItem(TABLE, hold(100), 1_000, 0)], 'a', 1, 2, undefined, 0));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200), 2_500, 1_500)], 'b', 3, 4, undefined, 1_500));
    // r-1: its holder's heartbeat extends the lease to 5_000, and the lock is taken at 3_000
    watch.observe(exchange([extendLockItem(TABLE, hold(200), 5_000)], 'c', 5, 6, undefined, 2_000));
    watch.observe(exchange([acquireLockItem(TABLE, hold(300), 6_000, 3_000)], 'd', 7, 8, undefined, 3_000));
    // r-2: the holder's release was in flight beside the acquisition (sent before its answer): DynamoDB may have applied it first
    watch.observe(exchange([acquireLockItem(TABLE, hold(100, 'r-2'), 5_000, 0)], 'e', 9, 10, undefined, 0));
    watch.observe(exchange([releaseLockItem(TABLE, hold(100, 'r-2'))], 'f', 11, 14, undefined, 900));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200, 'r-2'), 6_000, 1_000)], 'g', 12, 13, undefined, 1_000));
    // r-3: the holder's heartbeat (lease to 5_000) was forwarded before the acquisition and answered after it; it landed, so
    // it applied first (after the acquisition its condition fails), and the acquisition at 1_500 took a live lock
    watch.observe(exchange([acquireLockItem(TABLE, hold(100, 'r-3'), 1_000, 0)], 'h', 20, 21, undefined, 0));
    watch.observe(exchange([acquireLockItem(TABLE, hold(200, 'r-3'), 6_000, 1_500)], 'j', 23, 24, undefined, 1_500));
    watch.observe(exchange([extendLockItem(TABLE, hold(100, 'r-3'), 5_000)], 'i', 22, 25, undefined, 1_400));
    assert.deepEqual(watch.report().liveTakeovers, [
      'acquire of r-1 with fence 300 sent 2000 ms before the lease of fence 200 ended',
      'acquire of r-3 with fence 200 sent 3500 ms before the lease of fence 100 ended',
    ]);
    assert.deepEqual(watch.report().staleWritesApplied, []);
  });
});
