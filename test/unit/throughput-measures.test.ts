import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coldImportRatio, type BundleMeasure } from '../../workloads/accounts/bench/throughput/bundles.ts';
import { itemWritesOf } from '../../workloads/accounts/bench/throughput/item-writes.ts';

describe('throughput bench: item writes per request, cold import ratio', () => {
  it('counts one per transaction entry (a ConditionCheck too), one per batch request, one per single write, none for a read', () => {
    const entry = { Put: { TableName: 't', Item: {} } };
    assert.equal(itemWritesOf('TransactWriteItemsCommand', { TransactItems: [entry, entry, { ConditionCheck: { TableName: 't', Key: {} } }] }), 3);
    assert.equal(itemWritesOf('BatchWriteItemCommand', { RequestItems: { a: [{}, {}], b: [{}] } }), 3);
    for (const command of ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']) assert.equal(itemWritesOf(command, {}), 1, command);
    for (const command of ['GetItemCommand', 'QueryCommand', 'TransactGetItemsCommand']) assert.equal(itemWritesOf(command, {}), 0, command);
    assert.equal(itemWritesOf('TransactWriteItemsCommand', {}), 0, 'a malformed request asks for nothing');
  });

  it('takes the cold import ratio round by round: a slow round slows both sides, where the ratio of two medians would not pair them', () => {
    const measure = (samples: number[]) => ({ coldImportSamplesMs: samples }) as unknown as BundleMeasure;
    // Rounds 2 and 3 ran slow; in every round but the third, a imported faster than b.
    const a = measure([90, 130, 140]);
    const b = measure([100, 150, 120]);
    assert.equal(coldImportRatio(a, b), 90 / 100);
    assert.ok(130 / 120 > 1, 'taken apart, the medians (130 and 120) would put a above b');
  });
});
