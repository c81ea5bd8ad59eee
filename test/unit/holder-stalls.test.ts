import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { marshall } from '@aws-sdk/util-dynamodb';
import { acquireLockItem, extendLockItem, releaseLockItem, type TransactItem } from '../../shared/lock/index.ts';
import { holderStalls } from '../../local/chaos/holder-stalls.ts';

const TABLE = 'control';
const hold = (resourceId: string) => ({ resourceId, ownerToken: 'owner', fence: 100 });
const wire = (item: TransactItem, token: string) => ({
  ClientRequestToken: token,
  TransactItems: [{ Update: { ...item.Update, Key: marshall(item.Update?.Key ?? {}), ExpressionAttributeValues: marshall(item.Update?.ExpressionAttributeValues ?? {}) } }],
});

describe('holder stalls', () => {
  const never = new AbortController().signal;

  it('holds heartbeats and commits on the given resources only, every copy of a held token with the first, until a newer holder took the lock', async () => {
    const draws = [0.1, 0.9];
    let newest = 100;
    const stalls = holderStalls({ resources: new Set(['hot']), holdMs: 5_000, random: () => draws.shift() ?? 0.9, newestFence: (resourceId) => (resourceId === 'hot' ? newest : 0) });
    stalls.rate = 0.25;
    // not a convoy resource, or an acquisition: never held, no draw
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('cold')), 't0'), never), 0);
    assert.equal(stalls.holdOf('TransactWriteItems', wire(acquireLockItem(TABLE, hold('hot'), 1_000, 0), 't1'), never), 0);
    // drawn 0.1 < 0.25: held; its SDK retry (same token) waits for the same hold
    const first = stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't2'), never);
    const again = stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't2'), never);
    assert.ok(first instanceof Promise && again === first, 'the copy waits for the first one\'s hold');
    let released = false;
    void first.then(() => void (released = true));
    await delay(100);
    assert.equal(released, false, 'held while its own fence is the newest');
    newest = 101;
    await delay(100);
    assert.equal(released, true, 'let go once a newer holder\'s acquisition landed');
    // drawn 0.9: let through, and so are its copies, without another draw
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't3'), never), 0);
    draws.unshift(0);
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't3'), never), 0);
    assert.equal(stalls.held(), 1);
    // rate 0: off
    stalls.rate = 0;
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't4'), never), 0);
  });

  it('lets a held write go after holdMs when nobody takes the lock, and at once when the proxy stops', async () => {
    const stalls = holderStalls({ resources: new Set(['hot']), holdMs: 200, random: () => 0, newestFence: () => 0 });
    stalls.rate = 1;
    const startedMs = performance.now();
    await stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't5'), never);
    const heldMs = performance.now() - startedMs;
    assert.ok(heldMs >= 190 && heldMs < 2_000, `held ${heldMs} ms`);
    const stopping = new AbortController();
    const held = stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't6'), stopping.signal);
    stopping.abort();
    await assert.rejects(held as Promise<void>, { name: 'AbortError' });
  });
});
