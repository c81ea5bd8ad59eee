/** The chaos run's slow readers: which table answers the DynamoDB proxy holds. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readerStalls } from '../../local/chaos/reader-stalls.ts';

const get = (pk: string, consistent = true) => ({ TableName: 'state', Key: { pk: { S: pk } }, ...(consistent ? { ConsistentRead: true } : {}) });

describe('chaos reader stalls', () => {
  it("holds the answers of strongly consistent reads of cached entities' items, at its rate, and counts them", () => {
    const draws = [0.05, 0.5, 0.05];
    let drawn = 0;
    const stalls = readerStalls({ entities: ['account', 'sku'], holdMs: 1_000, random: () => draws[drawn++] ?? 0.99 });
    assert.equal(stalls.holdAnswerOf('GetItem', get('account#a-1')), 0, 'off until a rate is set');
    stalls.rate = 0.1;
    assert.deepEqual([get('account#a-1'), get('sku#s-1'), get('account#a-2')].map((body) => stalls.holdAnswerOf('GetItem', body)), [1_000, 0, 1_000]);
    // not a reader's table read: another item, an eventually consistent read, a write
    assert.equal(stalls.holdAnswerOf('GetItem', get('reservation#r-1')), 0);
    assert.equal(stalls.holdAnswerOf('GetItem', get('account#a-3', false)), 0);
    assert.equal(stalls.holdAnswerOf('PutItem', { TableName: 'state', Item: { pk: { S: 'account#a-1' } } }), 0);
    assert.equal(stalls.held(), 2);
    assert.equal(drawn, 3, 'only eligible reads drew');
  });
});
