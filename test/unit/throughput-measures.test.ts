import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coldImportRatio, type BundleMeasure } from '../../bench/throughput/bundles.ts';
import { billPerMillionRecords, PRICES } from '../../bench/throughput/bill.ts';
import { capacityOf, itemSize } from '../../bench/throughput/capacity.ts';
import { itemWritesOf } from '../../bench/throughput/item-writes.ts';

describe('throughput bench: item writes per request, capacity units and the bill, cold import ratio', () => {
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

  it('costs a request by the service\'s billing rules: a write unit per KB of item, twice in a transaction; half a read unit per item read eventually consistent', () => {
    const small = { pk: { S: 'idem#a' }, status: { S: 'COMPLETED' } };
    const large = { pk: { S: 'k' }, blob: { S: 'x'.repeat(1500) } };
    assert.equal(itemSize(small), 'pk'.length + 'idem#a'.length + 'status'.length + 'COMPLETED'.length);
    assert.equal(itemSize({ n: { N: '-12345.6' } }), 1 + 4, 'a number: about a byte per two digits, plus one');
    assert.equal(itemSize({ m: { M: { a: { S: 'xy' } } } }), 1 + 3 + (1 + 2) + 1);
    assert.equal(itemSize({ b: { B: 'QQ==' } }), 1 + 1, 'binary, in base64 on the wire: its bytes, not its padding');
    assert.deepEqual(capacityOf('PutItemCommand', { Item: small }), { read: 0, write: 1 });
    assert.deepEqual(capacityOf('PutItemCommand', { Item: large }), { read: 0, write: 2 }, 'rounded up per KB');
    assert.deepEqual(capacityOf('UpdateItemCommand', { Key: { pk: { S: 'a' } } }), { read: 0, write: 1 }, 'the stored item, taken as under 1 KB');
    // A transaction: every item twice, a Put by its size and an Update or ConditionCheck as under 1 KB
    const transaction = { TransactItems: [{ Put: { Item: small } }, { Put: { Item: large } }, { Update: { Key: {} } }, { ConditionCheck: { Key: {} } }] };
    assert.deepEqual(capacityOf('TransactWriteItemsCommand', transaction), { read: 0, write: 2 * (1 + 2 + 1 + 1) });
    assert.deepEqual(capacityOf('BatchWriteItemCommand', { RequestItems: { t: [{ PutRequest: { Item: large } }, { DeleteRequest: { Key: {} } }] } }), { read: 0, write: 3 });
    assert.deepEqual(capacityOf('BatchGetItemCommand', { RequestItems: { a: { Keys: [{}, {}, {}] }, b: { Keys: [{}], ConsistentRead: true } } }), { read: 1.5 + 1, write: 0 });
    assert.deepEqual(capacityOf('GetItemCommand', { ConsistentRead: true }), { read: 1, write: 0 });
    assert.deepEqual(capacityOf('DescribeTableCommand', {}), { read: 0, write: 0 });
  });

  it('prices a million records: GB-seconds at the memory setting and requests for Lambda, units for DynamoDB, the refused units on a line of their own', () => {
    const bill = billPerMillionRecords({ lambdaMsPerRecord: 10, invocationsPerRecord: 0.1, readUnitsPerRecord: 0.5, writeUnitsPerRecord: 4, cancelledWriteUnitsPerRecord: 2 }, 512);
    // 10 s of a 0.5 GB function per thousand records: 5,000 GB-s and 100,000 invocations per million
    assert.ok(Math.abs(bill.lambda - (5_000 * PRICES.lambdaGbSecond + 100_000 * PRICES.lambdaRequest)) < 1e-9, JSON.stringify(bill));
    assert.ok(Math.abs(bill.dynamodb - (500_000 * PRICES.dynamodbReadUnit + 4_000_000 * PRICES.dynamodbWriteUnit)) < 1e-9, JSON.stringify(bill));
    assert.ok(Math.abs(bill.cancelled - 2_000_000 * PRICES.dynamodbWriteUnit) < 1e-9, JSON.stringify(bill));
  });
});
