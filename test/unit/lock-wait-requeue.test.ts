import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { canRequeue, lockWaitSeconds, processBatch, requeuedMessage, retryDelaySeconds, type ProcessBatchOptions } from '../../shared/batch/index.ts';
import { ClaimHeldError, LockBusyError, REASONS, TransientError } from '../../shared/errors/index.ts';
import { jobRecord } from '../helpers/sqs-records.ts';

const HOUR_MS = 3_600_000;
const busy = (retryAfterMs: number) => new LockBusyError('resource a is locked', { context: { lockKey: 'lock#a', retryAfterMs } });
const attributes = (count: number): SQSMessageAttributes => Object.fromEntries(Array.from({ length: count }, (_, i) => [
  `p${i}`, { dataType: 'String', stringValue: `v${i}`, stringListValues: [], binaryListValues: [] },
]));
const sentAt = (record: SQSRecord, ms: number): SQSRecord => ({ ...record, attributes: { ...record.attributes, SentTimestamp: String(ms) } });

describe('lockWaitSeconds: how long a record waits before trying a held lock again', () => {
  it('is its backoff, never longer than the holder\'s lease: a holder releases when its job is done, usually long before its lease', () => {
    // A holder that heartbeats keeps its lease a whole term (30 s) ahead: waiting it out would idle the resource
    assert.equal(lockWaitSeconds(1, 30_000, {}, () => 0), 1);
    assert.equal(lockWaitSeconds(1, 30_000, {}, () => 1), 2);
    assert.equal(lockWaitSeconds(4, 30_000, {}, () => 1), 16);
    // Never past the lease: then the lock is free, or its holder stalled and the lock can be taken over
    assert.equal(lockWaitSeconds(4, 3_200, {}, () => 1), 4);
    assert.equal(lockWaitSeconds(9, 30_000, { maxSeconds: 300 }, () => 1), 30);
    // A lease that already ended (a stalled holder's) still waits a second, not zero: no spinning on one lock
    assert.equal(lockWaitSeconds(1, -500, {}, () => 0), 1);
    // A lease it was not told is no bound: the plain backoff
    assert.equal(lockWaitSeconds(3, Number.NaN, {}, () => 1), 8);
  });

  it('only for a record its last receive can requeue: on a FIFO queue, or with no attribute room, the wait stays the lease', () => {
    const record = jobRecord({ resourceId: 'a' });
    assert.equal(canRequeue(record), true);
    assert.equal(canRequeue(jobRecord({ resourceId: 'a' }, { groupId: 'g' })), false, 'FIFO');
    assert.equal(canRequeue({ ...record, messageAttributes: attributes(10) }), false);
    assert.equal(canRequeue({ ...record, messageAttributes: attributes(9) }), true);
    const waited = { 'ballast.lockWaitSince': { dataType: 'Number', stringValue: '1', stringListValues: [], binaryListValues: [] } };
    assert.equal(canRequeue({ ...record, messageAttributes: { ...attributes(9), ...waited } }), true, 'its own attribute is replaced, not added');
  });
});

describe('requeuedMessage: a record still waiting for a lock, sent again as a new message', () => {
  it('carries the body and every attribute, is delayed by its lock wait, and remembers since when it waits', () => {
    const record = sentAt({ ...jobRecord({ resourceId: 'a' }, { attempt: 5 }), messageAttributes: attributes(2) }, 1_000);
    const copy = requeuedMessage(record, busy(2_500), { nowMs: 60_000, maxLockWaitMs: HOUR_MS });
    assert.equal(copy?.MessageBody, record.body);
    assert.equal(copy?.DelaySeconds, 3, "the holder's lease, rounded up, being shorter than the fifth receive's backoff");
    assert.equal(requeuedMessage(record, busy(30_000), { nowMs: 60_000, maxLockWaitMs: HOUR_MS, random: () => 0 })?.DelaySeconds, 16,
      'the backoff the receives had reached, not a whole lease');
    assert.deepEqual(copy?.MessageAttributes, {
      p0: { DataType: 'String', StringValue: 'v0' }, p1: { DataType: 'String', StringValue: 'v1' },
      'ballast.lockWaitSince': { DataType: 'Number', StringValue: '1000' },
    });
    // A copy requeued again keeps the first wait's start, not its own send time
    const again = sentAt({ ...record, messageAttributes: { ...record.messageAttributes, 'ballast.lockWaitSince': { dataType: 'Number', stringValue: '500', stringListValues: [], binaryListValues: [] } } }, 50_000);
    assert.equal(requeuedMessage(again, busy(0), { nowMs: 60_000, maxLockWaitMs: HOUR_MS })?.MessageAttributes?.['ballast.lockWaitSince']?.StringValue, '500');
    // SQS delays a message 15 minutes at most
    const late = sentAt(jobRecord({ resourceId: 'a' }, { attempt: 12 }), 1_000);
    assert.equal(requeuedMessage(late, busy(2 * HOUR_MS), { nowMs: 60_000, maxLockWaitMs: 3 * HOUR_MS, backoff: { maxSeconds: 3_600 }, random: () => 1 })?.DelaySeconds, 900);
  });

  it("a verdict waiting for its own claim's lease waits it out whole: nothing ends that lease sooner", () => {
    const record = sentAt(jobRecord({ resourceId: 'a' }, { attempt: 5 }), 1_000);
    const held = (retryAfterMs: number) => new ClaimHeldError('partner-rejected', 'refused; its claim could not be given back', { context: { retryAfterMs } });
    // Its backoff when that is longer, else the lease, rounded up: a lock's holder may release early, its own claim will not
    assert.equal(requeuedMessage(record, held(45_000), { nowMs: 60_000, maxLockWaitMs: HOUR_MS, random: () => 0 })?.DelaySeconds, 45);
    assert.equal(requeuedMessage(record, busy(45_000), { nowMs: 60_000, maxLockWaitMs: HOUR_MS, random: () => 0 })?.DelaySeconds, 16);
    assert.equal(retryDelaySeconds(jobRecord({ resourceId: 'a' }, { attempt: 1 }), held(2_500), {}, () => 0), 3);
    // Past the backoff's cap too (a lease of 10 minutes against a 5-minute cap), and past the longest lock wait: it ends with the lease
    assert.equal(retryDelaySeconds(jobRecord({ resourceId: 'a' }, { attempt: 1 }), held(600_000), { maxSeconds: 300 }, () => 0), 600);
    const longWaited = sentAt(jobRecord({ resourceId: 'a' }, { attempt: 5 }), 1_000);
    assert.equal(requeuedMessage(longWaited, held(30_000), { nowMs: 2 * HOUR_MS, maxLockWaitMs: HOUR_MS, random: () => 0 })?.DelaySeconds, 30);
    assert.equal(requeuedMessage(longWaited, busy(30_000), { nowMs: 2 * HOUR_MS, maxLockWaitMs: HOUR_MS }), undefined);
    assert.equal(retryDelaySeconds(jobRecord({ resourceId: 'a' }, { attempt: 1 }), busy(2_500), {}, () => 0), 1);
  });

  it('declines (the record is then dead-lettered with lock-busy) past the longest wait, on a FIFO queue, or with no room left for its attribute', () => {
    const record = sentAt(jobRecord({ resourceId: 'a' }), 1_000);
    assert.equal(requeuedMessage(record, busy(1_000), { nowMs: HOUR_MS + 1_001, maxLockWaitMs: HOUR_MS }), undefined, 'waited longer than the bound');
    assert.ok(requeuedMessage(record, busy(1_000), { nowMs: HOUR_MS + 1_000, maxLockWaitMs: HOUR_MS }));
    // A malformed start falls back to the send time; a start in the future (a skewed clock) counts as now, never later
    const carrying = (since: string) => ({ ...record, messageAttributes: { 'ballast.lockWaitSince': { dataType: 'Number', stringValue: since, stringListValues: [], binaryListValues: [] } } });
    assert.equal(requeuedMessage(carrying('soon'), busy(0), { nowMs: HOUR_MS + 1_001, maxLockWaitMs: HOUR_MS }), undefined);
    assert.equal(requeuedMessage(carrying(String(10 * HOUR_MS)), busy(0), { nowMs: 5_000, maxLockWaitMs: HOUR_MS })?.MessageAttributes['ballast.lockWaitSince']?.StringValue, '5000');
    const fifo = sentAt(jobRecord({ resourceId: 'a' }, { groupId: 'g' }), 1_000);
    assert.equal(requeuedMessage(fifo, busy(1_000), { nowMs: 1, maxLockWaitMs: HOUR_MS }), undefined, 'a FIFO group keeps its order: no copy at its end');
    assert.equal(requeuedMessage({ ...record, messageAttributes: attributes(10) }, busy(1_000), { nowMs: 1, maxLockWaitMs: HOUR_MS }), undefined);
    assert.ok(requeuedMessage({ ...record, messageAttributes: attributes(9) }, busy(1_000), { nowMs: 1, maxLockWaitMs: HOUR_MS }));
  });
});

describe('processBatch: waiting for a lock is not failing', () => {
  function harness(requeue: ProcessBatchOptions['requeue']) {
    const deadLettered: string[] = [];
    const options: ProcessBatchOptions = {
      remainingTimeMs: () => 60_000,
      maxReceiveCount: 3,
      run: async (_record, envelope) => {
        if (envelope.payload.kind === 'busy') throw busy(2_000);
        if (envelope.payload.kind === 'held') throw new ClaimHeldError('partner-rejected', 'refused; its claim could not be given back', { context: { retryAfterMs: 2_000 } });
        // What a cancellation the store cannot explain is reported as: no lock held, nothing to wait for
        if (envelope.payload.kind === 'unexplained') throw new TransientError(REASONS.lockBusy, 'transaction cancelled: [None, None]');
        throw new TransientError(REASONS.throttled, 'slow down');
      },
      deadLetter: async (record, error) => void deadLettered.push(`${record.messageId}:${error.reason}`),
      requeue,
    };
    return { options, deadLettered };
  }

  it('on its last receive, a record meeting a held lock (or its own held claim) is requeued and deleted, not dead-lettered; any other failure there still goes to the DLQ', async () => {
    const requeued: string[] = [];
    const { options, deadLettered } = harness(async (record, error) => {
      requeued.push(`${record.messageId}:${error.reason}`);
      return true;
    });
    const outcomes = await processBatch([
      jobRecord({ resourceId: 'a', payload: { kind: 'busy' } }, { attempt: 3, messageId: 'last' }),
      jobRecord({ resourceId: 'b', payload: { kind: 'busy' } }, { attempt: 1, messageId: 'first' }),
      jobRecord({ resourceId: 'c', payload: { kind: 'throttled' } }, { attempt: 3, messageId: 'other' }),
      jobRecord({ resourceId: 'd', payload: { kind: 'unexplained' } }, { attempt: 3, messageId: 'unexplained' }),
      jobRecord({ resourceId: 'e', payload: { kind: 'held' } }, { attempt: 3, messageId: 'held' }),
    ], options);
    assert.deepEqual(outcomes.map((o) => o.status), ['requeued', 'retry', 'dead-lettered', 'dead-lettered', 'requeued']);
    assert.deepEqual(requeued, ['last:lock-busy', 'held:partner-rejected'], 'a receive to spare: retried as before, by its visibility');
    assert.deepEqual(deadLettered, ['other:throttled', 'unexplained:lock-busy'], 'only a held lock (LockBusyError) or claim (ClaimHeldError) is waited for');
  });

  it('a requeue declined (waited too long) or failed leaves the record to the DLQ with lock-busy, never a silent drop', async () => {
    for (const requeue of [async () => false, async () => { throw new Error('socket hang up'); }]) {
      const { options, deadLettered } = harness(requeue);
      const [outcome] = await processBatch([jobRecord({ resourceId: 'a', payload: { kind: 'busy' } }, { attempt: 3, messageId: 'm' })], options);
      assert.equal(outcome?.status, 'dead-lettered');
      assert.deepEqual(deadLettered, ['m:lock-busy']);
    }
  });
});
