import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSRecord } from 'aws-lambda';
import { processBatch, type ProcessBatchOptions } from '../../shared/batch/index.ts';
import type { Envelope } from '../../shared/envelope/index.ts';
import { FatalError, LaneWaitError, REASONS, TransientError, type BallastError } from '../../shared/errors/index.ts';
import { jobRecord, sqsRecord } from '../helpers/sqs-records.ts';
import { ACCOUNT_REASONS } from '../../workloads/accounts/index.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Options whose `run` records calls and succeeds unless told otherwise. */
function harness(overrides: Partial<ProcessBatchOptions> = {}) {
  const calls: Envelope[] = [];
  const deadLettered: { record: SQSRecord; reason: string }[] = [];
  let active = 0;
  let maxActive = 0;
  const options: ProcessBatchOptions = {
    remainingTimeMs: () => 60_000,
    run: async (_record, envelope) => {
      calls.push(envelope);
      active += 1;
      maxActive = Math.max(maxActive, active);
      await sleep(5);
      active -= 1;
      return { kind: 'committed', result: null };
    },
    deadLetter: async (record, error) => void deadLettered.push({ record, reason: error.reason }),
    ...overrides,
  };
  return { options, calls, deadLettered, maxActive: () => maxActive };
}

describe('processBatch', () => {
  it('collapses in-batch duplicates: one run, the copies are reported as duplicates', async () => {
    const { options, calls } = harness();
    const body = jobRecord({ resourceId: 'a', idempotencyKey: 'k1' }).body;
    const records = [sqsRecord(body), sqsRecord(body), sqsRecord(body)];
    const outcomes = await processBatch(records, options);
    assert.equal(calls.length, 1);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'duplicate', 'duplicate']);
  });

  it('runs records of one resource in order, one at a time, and other resources concurrently up to the limit', async () => {
    const order: string[] = [];
    let active = new Map<string, number>();
    let overlapOnOneResource = false;
    let peak = 0;
    const { options } = harness({
      concurrency: 3,
      run: async (_r, envelope) => {
        const now = (active.get(envelope.resourceId) ?? 0) + 1;
        active.set(envelope.resourceId, now);
        if (now > 1) overlapOnOneResource = true;
        peak = Math.max(peak, [...active.values()].reduce((a, b) => a + b, 0));
        order.push(`${envelope.resourceId}:${(envelope.payload as { amount: number }).amount}`);
        await sleep(5);
        active.set(envelope.resourceId, (active.get(envelope.resourceId) ?? 1) - 1);
        return { kind: 'committed', result: null };
      },
    });
    const records = ['a', 'b', 'c', 'd', 'e'].flatMap((id) => [1, 2, 3].map((n) => jobRecord({ resourceId: id, payload: { amount: n } })));
    const outcomes = await processBatch(records, options);
    assert.ok(outcomes.every((o) => o.status === 'processed'));
    assert.equal(overlapOnOneResource, false, 'two records of one resource overlapped');
    assert.ok(peak <= 3, `peak concurrency ${peak} exceeded 3`);
    for (const id of ['a', 'b', 'c', 'd', 'e']) {
      assert.deepEqual(order.filter((x) => x.startsWith(`${id}:`)), [`${id}:1`, `${id}:2`, `${id}:3`]);
    }
  });

  it('tells each record how many records wait behind it in its lane (what its commit is grouped by)', async () => {
    const seen: string[] = [];
    const { options } = harness({
      run: async (_r, envelope, _signal, followers) => {
        seen.push(`${envelope.resourceId}:${(envelope.payload as { amount: number }).amount}:${followers}`);
        return { kind: 'committed', result: null };
      },
    });
    const records = [['a', 1], ['b', 2], ['a', 3], ['c', 4], ['a', 5], ['b', 6]].map(([resourceId, amount]) =>
      jobRecord({ resourceId: resourceId as string, payload: { amount } }));
    await processBatch(records, options);
    // Lane a holds three records, lane b two, lane c one: a head's followers are the rest of its lane.
    assert.deepEqual(seen.sort(), ['a:1:2', 'a:3:1', 'a:5:0', 'b:2:1', 'b:6:0', 'c:4:0']);
  });

  it('screens once, the records that wait for it: the head of a lane that goes on starts at once, every other record after the screen; a screen that throws only spares nothing', async () => {
    const events: string[] = [];
    // Lane a goes on (k1, then k3); lane b ends with k2; the unparseable record has no envelope.
    const records = [
      jobRecord({ resourceId: 'a', idempotencyKey: 'k1' }), sqsRecord('not json'), jobRecord({ resourceId: 'b', idempotencyKey: 'k2' }),
      jobRecord({ resourceId: 'a', idempotencyKey: 'k3' }),
    ];
    const { options } = harness({
      screen: async (envelopes) => {
        events.push(`screen ${envelopes.map((e) => e.idempotencyKey).join(',')}`);
        await sleep(20);
        events.push('screened');
      },
      run: async (_r, envelope) => {
        events.push(`run ${envelope.idempotencyKey}`);
        return { kind: 'committed', result: null };
      },
    });
    await processBatch(records, options);
    assert.equal(events[0], 'screen k2,k3', 'one screen, of the records that wait for it');
    assert.equal(events[1], 'run k1', 'the head of the lane that goes on did not wait');
    assert.equal(events[2], 'screened');
    assert.deepEqual(events.slice(3).sort(), ['run k2', 'run k3']);

    const { options: throwing } = harness({ screen: async () => { throw new Error('read failed'); } });
    const outcomes = await processBatch([jobRecord({ resourceId: 'a', idempotencyKey: 'k4' })], throwing);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed']);
  });

  it('deadline guard: with too little time left, unstarted records are reported failed and never run', async () => {
    let remaining = 10_000;
    const { options, calls } = harness({
      concurrency: 1,
      deadlineMarginMs: 5_000,
      remainingTimeMs: () => remaining,
      run: async (_r, envelope) => {
        calls.push(envelope);
        remaining -= 3_000; // each record eats 3 s of the budget
        return { kind: 'committed', result: null };
      },
    });
    const records = [1, 2, 3, 4].map((n) => jobRecord({ resourceId: 'same', payload: { amount: n } }));
    const outcomes = await processBatch(records, options);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'processed', 'retry', 'retry']);
    assert.equal(calls.length, 2);
    const reasons = outcomes.flatMap((o) => (o.status === 'retry' ? [o.error.reason] : []));
    assert.deepEqual(reasons, [REASONS.deadline, REASONS.deadline]);
    // (behind records of their lane that ran, they waited for their resource: see below)
    assert.ok(outcomes.slice(2).every((o) => o.status === 'retry' && o.error instanceof LaneWaitError));
  });

  it('FIFO: a failure fails the rest of its message group only', async () => {
    const { options, calls } = harness({
      run: async (_r, envelope) => {
        calls.push(envelope);
        if (envelope.payload.amount === 2) throw new TransientError(REASONS.dependencyUnavailable, 'down');
        return { kind: 'committed', result: null };
      },
    });
    const g1 = [1, 2, 3, 4].map((n) => jobRecord({ resourceId: `r${n}`, payload: { amount: n } }, { groupId: 'g1' }));
    const g2 = [5, 6].map((n) => jobRecord({ resourceId: `r${n}`, payload: { amount: n } }, { groupId: 'g2' }));
    const outcomes = await processBatch([...g1, ...g2], options);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'retry', 'retry', 'retry', 'processed', 'processed']);
    const blocked = outcomes.slice(2, 4).map((o) => (o.status === 'retry' ? o.error.reason : ''));
    assert.deepEqual(blocked, [REASONS.groupBlocked, REASONS.groupBlocked]);
    assert.ok(!calls.some((e) => [3, 4].includes(e.payload.amount as number)), 'blocked records never ran');
  });

  it('classifies: fatal → DLQ, transient → retry, unknown errors → retry, last receive → DLQ with the reason', async () => {
    const { options, deadLettered } = harness({
      maxReceiveCount: 5,
      run: async (_r, envelope) => {
        const kind = envelope.payload.kind;
        if (kind === 'fatal') throw new FatalError(ACCOUNT_REASONS.insufficientFunds, 'no money');
        if (kind === 'transient') throw new TransientError(REASONS.lockBusy, 'busy');
        throw new Error('boom');
      },
    });
    const records = [
      jobRecord({ resourceId: 'a', payload: { kind: 'fatal' } }),
      jobRecord({ resourceId: 'b', payload: { kind: 'transient' } }),
      jobRecord({ resourceId: 'c', payload: { kind: 'bug' } }),
      jobRecord({ resourceId: 'd', payload: { kind: 'transient' } }, { attempt: 5 }),
      sqsRecord('{not json'),
      sqsRecord(JSON.stringify({ schemaVersion: '9.0' }), { attempt: 2 }),
      sqsRecord(JSON.stringify({ schemaVersion: '9.0' }), { attempt: 5 }),
    ];
    const outcomes = await processBatch(records, options);
    assert.deepEqual(outcomes.map((o) => o.status), ['dead-lettered', 'retry', 'retry', 'dead-lettered', 'dead-lettered', 'retry', 'dead-lettered']);
    assert.deepEqual(deadLettered.map((d) => d.reason).sort(),
      [REASONS.incompatibleVersion, ACCOUNT_REASONS.insufficientFunds, REASONS.invalidEnvelope, REASONS.lockBusy].sort());
    const unexpected = outcomes[2];
    assert.equal(unexpected?.status === 'retry' && unexpected.error.reason, REASONS.unexpected);
  });

  it('on their last receive, records that never ran (deadline, blocked group) are dead-lettered with that reason', async () => {
    const { options, deadLettered } = harness({
      maxReceiveCount: 3,
      deadlineMarginMs: 5_000,
      remainingTimeMs: () => 1_000,
    });
    const outcomes = await processBatch([
      jobRecord({ resourceId: 'a' }, { attempt: 3 }),
      jobRecord({ resourceId: 'b' }, { attempt: 1 }),
    ], options);
    assert.deepEqual(outcomes.map((o) => o.status), ['dead-lettered', 'retry']);
    assert.deepEqual(deadLettered.map((d) => d.reason), [REASONS.deadline]);
  });

  it('on its last receive, a record not started after waiting behind records of its lane that ran is requeued like a lock wait; a lane that never ran is not', async () => {
    // GIVEN one worker; a lane of two records on one resource whose head eats the time; a lane of two on another resource behind it
    let remaining = 8_000;
    const requeued: { record: SQSRecord; error: BallastError }[] = [];
    const { options, deadLettered } = harness({
      concurrency: 1,
      maxReceiveCount: 3,
      deadlineMarginMs: 5_000,
      remainingTimeMs: () => remaining,
      run: async () => {
        remaining -= 6_000;
        return { kind: 'committed', result: null };
      },
      requeue: async (record, error) => {
        requeued.push({ record, error });
        return true;
      },
    });
    const outcomes = await processBatch([
      jobRecord({ resourceId: 'hot', idempotencyKey: 'head' }),
      jobRecord({ resourceId: 'hot', idempotencyKey: 'behind' }, { attempt: 3 }),
      jobRecord({ resourceId: 'other', idempotencyKey: 'unreached-head' }, { attempt: 3 }),
      jobRecord({ resourceId: 'other', idempotencyKey: 'unreached-next' }, { attempt: 3 }),
    ], options);
    // THEN the one behind a record that ran waited for its resource: requeued; the lane that never ran only ran out of time
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'requeued', 'dead-lettered', 'dead-lettered']);
    assert.ok(requeued[0]?.error instanceof LaneWaitError && requeued[0].error.reason === REASONS.deadline, String(requeued[0]?.error));
    assert.deepEqual(deadLettered.map((d) => d.reason), [REASONS.deadline, REASONS.deadline]);
  });

  it('a DLQ that cannot be reached turns the record into a retry, never a silent drop', async () => {
    const { options } = harness({
      run: async () => { throw new FatalError(ACCOUNT_REASONS.insufficientFunds, 'no money'); },
      deadLetter: async () => { throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }); },
    });
    const [outcome] = await processBatch([jobRecord({ resourceId: 'a' })], options);
    assert.equal(outcome?.status, 'retry');
    assert.equal(outcome?.status === 'retry' && outcome.error.reason, REASONS.dependencyUnavailable);
  });
});

/**
 * Records named by `payload.name` whose runs log `start:<name>` and `end:<name>` and finish only
 * when released; `resourcesOf` reads `payload.touches` (the string 'throw' makes it throw).
 */
function gatedHarness(overrides: Partial<ProcessBatchOptions> = {}) {
  const events: string[] = [];
  const gates = new Map<string, PromiseWithResolvers<void>>();
  const gate = (name: string) => {
    const existing = gates.get(name);
    if (existing) return existing;
    const created = Promise.withResolvers<void>();
    gates.set(name, created);
    return created;
  };
  const { options } = harness({
    concurrency: 10,
    resourcesOf: (envelope) => {
      if (envelope.payload.touches === 'throw') throw new Error('cannot tell');
      return envelope.payload.touches as string[];
    },
    run: async (_r, envelope) => {
      const name = envelope.payload.name as string;
      events.push(`start:${name}`);
      await gate(name).promise;
      events.push(`end:${name}`);
      return { kind: 'committed', result: null };
    },
    ...overrides,
  });
  const record = (name: string, resourceId: string, touches: string[] | 'throw') =>
    jobRecord({ resourceId, idempotencyKey: `k-${name}`, payload: { amount: 1, name, touches } });
  /** Lets the batch run until it waits on a gate (bounded: a few hundred turns of the event loop). */
  const settle = async () => {
    for (let turn = 0; turn < 200; turn += 1) await new Promise(setImmediate);
  };
  const release = (name: string) => gate(name).resolve();
  return { options, events, record, settle, release };
}

describe('processBatch: resourcesOf serializes records that share any resource', () => {
  it('a record touching [a, b] holds back a later one on [b], while one on [c] runs alongside it', async () => {
    const { options, events, record, settle, release } = gatedHarness();
    const batch = processBatch([record('X', 'a', ['a', 'b']), record('Y', 'b', ['b']), record('Z', 'c', ['c'])], options);
    await settle();
    assert.deepEqual(events, ['start:X', 'start:Z'], 'X and Z run concurrently, Y waits');
    release('X');
    await settle();
    assert.deepEqual(events, ['start:X', 'start:Z', 'end:X', 'start:Y'], 'Y starts only once X has finished');
    release('Y');
    release('Z');
    const outcomes = await batch;
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'processed', 'processed']);
  });

  it('merges transitively: P [a], Q [a, b], R [b] run strictly in input order', async () => {
    const { options, events, record, settle, release } = gatedHarness();
    const batch = processBatch([record('P', 'a', ['a']), record('Q', 'a', ['a', 'b']), record('R', 'b', ['b'])], options);
    for (const name of ['P', 'Q', 'R']) {
      await settle();
      release(name);
    }
    const outcomes = await batch;
    assert.deepEqual(events, ['start:P', 'end:P', 'start:Q', 'end:Q', 'start:R', 'end:R']);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'processed', 'processed']);
  });

  it('a resourcesOf that throws, or names nothing, leaves the record in its own resourceId lane; the batch still resolves', async () => {
    const { options, events, record, settle, release } = gatedHarness();
    const batch = processBatch([
      record('T', 't', 'throw'),
      record('U', 'u', ['t']),
      record('E', 'e', []),
      record('F', 'f', ['e']),
    ], options);
    await settle();
    assert.deepEqual(events, ['start:T', 'start:E'], 'U waits for T (lane t), F for E (lane e)');
    release('T');
    await settle();
    release('E');
    await settle();
    release('U');
    release('F');
    const outcomes = await batch;
    assert.deepEqual(events.slice(0, 6), ['start:T', 'start:E', 'end:T', 'start:U', 'end:E', 'start:F']);
    assert.deepEqual(outcomes.map((o) => o.status), ['processed', 'processed', 'processed', 'processed']);
  });
});

describe('processBatch: one hostile record never takes the batch down', () => {
  it('a payload nested 90,000 levels deep in a batch of 10 is dead-lettered as invalid-envelope on its first receive; the other nine run', async () => {
    // GIVEN nine good records and one whose payload nests ~90,000 levels (a 180 KB body with valid envelope fields)
    const deep = `${'{"a":'.repeat(90_000)}1${'}'.repeat(90_000)}`;
    const template = JSON.parse(jobRecord({ resourceId: 'deep', idempotencyKey: 'deep-1' }).body) as Record<string, unknown>;
    const body = JSON.stringify({ ...template, payload: '__DEEP__' }).replace('"__DEEP__"', `{"amount":1,"x":${deep}}`);
    const records = Array.from({ length: 10 }, (_, i) => (i === 4 ? sqsRecord(body) : jobRecord({ resourceId: `r${i}`, idempotencyKey: `k${i}` })));
    const { options, calls, deadLettered } = harness();
    // WHEN the batch runs
    const outcomes = await processBatch(records, options);
    // THEN it resolves (does not throw), the deep one is dead-lettered with its reason, nine ran
    assert.equal(outcomes[4]?.status, 'dead-lettered');
    assert.deepEqual(deadLettered.map((d) => d.reason), [REASONS.invalidEnvelope]);
    assert.equal(calls.length, 9);
    assert.equal(outcomes.filter((o) => o.status === 'processed').length, 9);
  });

  it('anything a record throws outside its job (here: its dead-letter send and its run) stays that record\'s failure', async () => {
    const { options } = harness({
      run: async (_r, envelope) => {
        if (envelope.resourceId === 'boom') throw new RangeError('Maximum call stack size exceeded');
        return { kind: 'committed', result: null };
      },
    });
    const outcomes = await processBatch([jobRecord({ resourceId: 'boom' }), jobRecord({ resourceId: 'fine' })], options);
    assert.deepEqual(outcomes.map((o) => o.status), ['retry', 'processed']);
  });
});
