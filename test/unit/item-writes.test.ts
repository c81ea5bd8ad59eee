import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { itemWritesOf } from '../../workloads/accounts/bench/throughput/item-writes.ts';

describe('throughput bench: item writes per request', () => {
  it('counts one per transaction entry (a ConditionCheck too), one per batch request, one per single write, none for a read', () => {
    const entry = { Put: { TableName: 't', Item: {} } };
    assert.equal(itemWritesOf('TransactWriteItemsCommand', { TransactItems: [entry, entry, { ConditionCheck: { TableName: 't', Key: {} } }] }), 3);
    assert.equal(itemWritesOf('BatchWriteItemCommand', { RequestItems: { a: [{}, {}], b: [{}] } }), 3);
    for (const command of ['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']) assert.equal(itemWritesOf(command, {}), 1, command);
    for (const command of ['GetItemCommand', 'QueryCommand', 'TransactGetItemsCommand']) assert.equal(itemWritesOf(command, {}), 0, command);
    assert.equal(itemWritesOf('TransactWriteItemsCommand', {}), 0, 'a malformed request asks for nothing');
  });
});
