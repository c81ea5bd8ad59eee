import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
  it('holds heartbeats and commits on the given resources only, and every copy of a held token until the first one\'s hold ends', () => {
    const draws = [0.1, 0.9];
    const stalls = holderStalls({ resources: new Set(['hot']), holdMs: 2_500, random: () => draws.shift() ?? 0.9 });
    stalls.rate = 0.25;
    // not a convoy resource, or an acquisition: never held, no draw
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('cold')), 't0')), 0);
    assert.equal(stalls.holdOf('TransactWriteItems', wire(acquireLockItem(TABLE, hold('hot'), 1_000, 0), 't1')), 0);
    // drawn 0.1 < 0.25: held; its SDK retry (same token) is held until the same moment
    assert.equal(stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't2')), 2_500);
    const again = stalls.holdOf('TransactWriteItems', wire(extendLockItem(TABLE, hold('hot'), 2_000), 't2'));
    assert.ok(again > 2_000 && again <= 2_500, `the retry is held ${again} ms`);
    // drawn 0.9: let through, and so are its copies, without another draw
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't3')), 0);
    draws.unshift(0);
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't3')), 0);
    assert.equal(stalls.held(), 1);
    // rate 0: off
    stalls.rate = 0;
    assert.equal(stalls.holdOf('TransactWriteItems', wire(releaseLockItem(TABLE, hold('hot')), 't4')), 0);
  });
});
