import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DynamoDBRecord } from 'aws-lambda';
import { planRecord } from '../../functions/cache-invalidator/stream-record.ts';

/** A stream record in Lambda's shape (images in AttributeValue JSON). */
function record(eventName: DynamoDBRecord['eventName'], pk: string, images: { newVersion?: string; oldVersion?: string; updatedAt?: string } = {}): DynamoDBRecord {
  const image = (version: string) => ({ pk: { S: pk }, version: { N: version }, balance: { N: '5' }, ...(images.updatedAt ? { updatedAt: { S: images.updatedAt } } : {}) });
  return {
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      Keys: { pk: { S: pk } },
      ...(images.newVersion ? { NewImage: image(images.newVersion) } : {}),
      ...(images.oldVersion ? { OldImage: image(images.oldVersion) } : {}),
      SequenceNumber: '100',
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

/** The registered cached entities, as the invalidator passes them. */
const CACHED = new Set(['account', 'sku']);

describe('planRecord', () => {
  it('INSERT and MODIFY tombstone the new version, with the commit time from updatedAt (ms precision)', () => {
    const updatedAt = '2026-05-01T10:00:00.123Z';
    assert.deepEqual(planRecord(record('MODIFY', 'account#acc-1', { oldVersion: '4', newVersion: '5', updatedAt }), CACHED), {
      kind: 'apply', change: { entity: 'account', id: 'acc-1', version: 5, committedAtMs: Date.parse(updatedAt) },
    });
    assert.deepEqual(planRecord(record('INSERT', 'account#acc-1', { newVersion: '1' }), CACHED), { kind: 'apply', change: { entity: 'account', id: 'acc-1', version: 1 } });
  });

  it('REMOVE tombstones the old version + 1', () => {
    assert.deepEqual(planRecord(record('REMOVE', 'account#acc-1', { oldVersion: '7' }), CACHED), { kind: 'apply', change: { entity: 'account', id: 'acc-1', version: 8 } });
  });

  it('applies every registered entity the same way, the entity and id from the key', () => {
    assert.deepEqual(planRecord(record('MODIFY', 'sku#sku-9', { oldVersion: '1', newVersion: '2' }), CACHED), { kind: 'apply', change: { entity: 'sku', id: 'sku-9', version: 2 } });
    assert.deepEqual(planRecord(record('MODIFY', 'sku#a#b', { newVersion: '2' }), CACHED).kind, 'ignore', 'an id with # is never cached');
  });

  it('ignores other entities and ids that are never cached', () => {
    assert.equal(planRecord(record('MODIFY', 'accounts#acc-1', { newVersion: '2' }), CACHED).kind, 'ignore', 'a prefix is a whole entity name');
    assert.equal(planRecord(record('MODIFY', 'no-separator', { newVersion: '2' }), CACHED).kind, 'ignore');
    assert.equal(planRecord(record('MODIFY', 'order#o-1', { newVersion: '2' }), CACHED).kind, 'ignore');
    assert.equal(planRecord(record('MODIFY', 'account#a{b}', { newVersion: '2' }), CACHED).kind, 'ignore');
  });

  it('flags records of a cached entity it cannot read as malformed', () => {
    for (const bad of [
      record('MODIFY', 'account#acc-1'),
      record('REMOVE', 'account#acc-1', { newVersion: '2' }),
      record('MODIFY', 'account#acc-1', { newVersion: '1.5' }),
      record('MODIFY', 'account#acc-1', { newVersion: '99999999999999999999' }),
      { ...record('MODIFY', 'account#acc-1', { newVersion: '2' }), eventName: 'TRUNCATE' as never },
      { eventName: 'MODIFY', dynamodb: {} } as DynamoDBRecord,
    ]) assert.equal(planRecord(bad, CACHED).kind, 'malformed', JSON.stringify(bad));
  });
});
