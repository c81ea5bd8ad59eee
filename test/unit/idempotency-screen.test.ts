import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { refusesNewRecord, STATUS, type IdempotencyRecord } from '../../shared/idempotency/record.ts';
import { DuplicateShare } from '../../shared/idempotency/screen.ts';

describe('idempotency screen', () => {
  const nowMs = 1_800_000_000_000;
  const record = (fields: Partial<IdempotencyRecord>): IdempotencyRecord => ({
    pk: 'idem#k', status: STATUS.completed, payloadHash: 'h', jobType: 't', jobId: 'j', expiresAtEpochSeconds: nowMs / 1000 + 60, ...fields,
  });

  it('a record refuses a new one exactly when the Put\'s condition would: complete or in progress under a live lease, within its retention', () => {
    assert.equal(refusesNewRecord(undefined, nowMs), false, 'no record: the Put goes ahead');
    assert.equal(refusesNewRecord(record({}), nowMs), true, 'completed');
    assert.equal(refusesNewRecord(record({ expiresAtEpochSeconds: nowMs / 1000 - 1 }), nowMs), false, 'past its retention (TTL deletes lazily)');
    assert.equal(refusesNewRecord(record({ status: STATUS.inProgress, leaseUntilMs: nowMs + 1 }), nowMs), true, 'a live claim');
    assert.equal(refusesNewRecord(record({ status: STATUS.inProgress, leaseUntilMs: nowMs - 1 }), nowMs), false, 'an abandoned claim');
    // Where DynamoDB's own comparison would decide otherwise: whole seconds, and a missing attribute
    assert.equal(refusesNewRecord(record({ expiresAtEpochSeconds: nowMs / 1000 }), nowMs + 500), true, 'still within its last second, as :nowSeconds is whole');
    assert.equal(refusesNewRecord(record({ status: STATUS.inProgress, leaseUntilMs: undefined }), nowMs), true, 'a claim without a lease is not writable');
  });

  it('the duplicate share is taken over the last window of commits, and over those seen once there are enough: a fresh sandbox screens without waiting for a full window', () => {
    const share = new DuplicateShare(10, 4);
    share.add(true);
    assert.equal(share.share, 0, 'too few commits to tell');
    for (let i = 0; i < 3; i += 1) share.add(false);
    assert.equal(share.share, 0.25, 'one in the four seen');
    for (let i = 0; i < 6; i += 1) share.add(false);
    assert.equal(share.share, 0.1, 'one in a full window of ten');
    share.add(false);
    assert.equal(share.share, 0, 'the duplicate aged out');
    for (let i = 0; i < 25; i += 1) share.add(i % 5 === 0);
    assert.equal(share.share, 0.2);
    const whole = new DuplicateShare(10);
    whole.add(true);
    assert.equal(whole.share, 0, 'without a minimum, a full window is needed');
  });
});
