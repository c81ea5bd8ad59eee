import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { JOB_TYPES } from '../../workloads/accounts/index.ts';
import { METRICS } from '../../shared/observability/index.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { exitOf, runNode, waitForOutput } from '../helpers/processes.ts';
import { useWorkerHarness, type TestQueues } from '../helpers/worker-harness.ts';
import type { WorkerConfig } from '../../functions/worker/config.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const childWorker = fileURLToPath(new URL('../helpers/worker-child.ts', import.meta.url));

describe('worker: exactly-once effects on DynamoDB Local + fauxqs', () => {
  const h = useWorkerHarness();

  /** Runs the worker in a child process that stops after the partner call; returns the process. */
  async function holderAfterSideEffect(queues: TestQueues, config: Partial<WorkerConfig>, holdMs: number) {
    const child = runNode(childWorker, [], { BALLAST_TEST_WORKER: JSON.stringify({ queues, config: h.config(queues, config), holdMs }) });
    await waitForOutput(child, /SIDE_EFFECT_DONE/, 30_000);
    return child;
  }

  it('the same credit delivered 5 times concurrently changes the balance exactly once', async () => {
    // GIVEN five copies of one credit on the queue
    const queues = await h.queues();
    const credit = h.envelope({ resourceId: 'acc-concurrent', payload: { amount: 250 } });
    for (let i = 0; i < 5; i += 1) await h.send(queues, credit);
    const worker = h.worker(queues);
    // WHEN five invocations take one copy each at the same time, then the queue drains
    const { output } = await captureOutput(async () => {
      await Promise.all(Array.from({ length: 5 }, () => h.deliver(queues, worker, { max: 1 })));
      await h.drain(queues, worker);
    });
    // THEN the balance moved once, four copies were suppressed, nothing was dead-lettered
    const account = await h.account('acc-concurrent');
    assert.equal(account?.balance, 250);
    assert.equal(account?.version, 1);
    assert.equal(metricTotal(output, METRICS.processed), 1);
    assert.equal(metricTotal(output, METRICS.duplicates), 4);
    assert.deepEqual(await h.deadLetters(queues), []);
  });

  it('a crash after commit and before the message is deleted: the redelivery is a no-op', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 1 });
    const worker = h.worker(queues);
    await h.send(queues, h.envelope({ resourceId: 'acc-crash-commit', payload: { amount: 40 } }));
    // WHEN the first invocation commits but never gets its message deleted
    const first = await h.deliver(queues, worker, { crashAfterHandler: true });
    assert.equal(first.records.length, 1);
    await sleep(1_100);
    // THEN the redelivery (attempt 2) is recognised as done and changes nothing
    h.resetRoundTrips();
    const { value: second, output } = await captureOutput(() => h.deliver(queues, worker));
    assert.equal(second.records[0]?.attributes.ApproximateReceiveCount, '2');
    assert.deepEqual(second.response, { batchItemFailures: [] });
    assert.equal(metricTotal(output, METRICS.duplicates), 1);
    assert.equal(h.roundTrips(), 1, 'a duplicate of a completed job costs one round trip');
    assert.equal((await h.account('acc-crash-commit'))?.balance, 40);
  });

  it('a crash after claim and before commit: after the lease, another worker completes it; the effect happens once', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 2 });
    const accountId = 'acc-crash-claim';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues));
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));

    // GIVEN a worker that claimed the job, called the partner, and died before committing
    const crashed = await holderAfterSideEffect(queues, { leaseMs: 1_500 }, 60_000);
    crashed.kill('SIGKILL');
    await exitOf(crashed, 5_000);
    assert.equal(h.partner.effects(accountId), 1);

    // WHEN the message reappears after its visibility timeout and the lease has expired
    await sleep(2_100);
    await h.drain(queues, h.worker(queues, { config: { leaseMs: 1_500 } }));

    // THEN the second worker completed it with the partner's replayed answer: one effect in all
    assert.equal(h.partner.effects(accountId), 1);
    assert.ok(h.partner.requests() >= 2, 'the partner was asked again, with the same Idempotency-Key');
    const account = await h.account(accountId);
    assert.equal((account?.profile as { revision?: number } | undefined)?.revision, 1);
    assert.equal(account?.version, 2, 'one credit + one profile sync');
  });

  it('a lock holder paused past its lease: a new holder proceeds; the old holder\'s commit is refused by the fence', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 30 });
    const accountId = 'acc-paused';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues));

    // GIVEN holder A: claimed the lock for job A, called the partner, then paused (SIGSTOP)
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'sync-A', payload: {} }));
    const holderA = await holderAfterSideEffect(queues, { leaseMs: 1_000 }, 200);
    holderA.kill('SIGSTOP');
    try {
      // WHEN its lease runs out and holder B syncs the same account under a new fence
      await sleep(1_200);
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'sync-B', payload: {} }));
      const b = await h.deliver(queues, h.worker(queues, { config: { leaseMs: 1_000 } }));
      assert.equal(b.records.length, 1);
      assert.deepEqual(b.response, { batchItemFailures: [] });
      const afterB = await h.account(accountId);
      assert.equal((afterB?.profile as { syncedBy?: string }).syncedBy, 'sync-B');
    } finally {
      holderA.kill('SIGCONT');
    }
    // THEN A resumes, its commit is refused, and the account still shows B's sync
    const output = await waitForOutput(holderA, /RESPONSE/, 15_000);
    await exitOf(holderA, 5_000);
    const response = JSON.parse(/RESPONSE (.*)/.exec(output)?.[1] ?? '{}') as { batchItemFailures: unknown[] };
    assert.equal(response.batchItemFailures.length, 1, 'A reports its record for retry');
    assert.match(output, /"reason":"fenced"/);
    const account = await h.account(accountId);
    assert.equal((account?.profile as { syncedBy?: string }).syncedBy, 'sync-B');
    assert.equal(account?.version, 2, 'one credit + B\'s sync; A changed nothing');
  });

  it('DynamoDB round trips per record: first credit = 1, duplicate of a completed job ≤ 1, first sync-profile = 2', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    const credit = h.envelope({ resourceId: 'acc-trips', payload: { amount: 10 } });

    await h.send(queues, credit);
    h.resetRoundTrips();
    await h.deliver(queues, worker);
    assert.equal(h.roundTrips(), 1, 'first-time credit');

    await h.send(queues, credit);
    h.resetRoundTrips();
    await h.deliver(queues, worker);
    assert.ok(h.roundTrips() <= 1, `duplicate: ${h.roundTrips()}`);

    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: 'acc-trips', payload: {} }));
    h.resetRoundTrips();
    const sync = await h.deliver(queues, worker);
    assert.deepEqual(sync.response, { batchItemFailures: [] });
    assert.equal(h.roundTrips(), 2, 'first-time sync-profile: claim + commit');

    // and the lock was released by the commit, in the same round trip
    const locks = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    const lock = locks.Items?.find((item) => item.pk === 'lock#acc-trips');
    assert.equal(lock?.ownerToken, undefined);
    assert.equal(lock?.leaseUntilMs, 0);
  });

  it('a long job heartbeats: its lease and its message visibility are extended, a rival backs off with lock-busy', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 1 });
    const accountId = 'acc-long';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues));
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'long-1', payload: {} }));
    h.partner.setDelay(1_800);
    try {
      // GIVEN a sync that takes 1.8 s under a 600 ms lease on a queue with a 1 s visibility timeout
      const worker = h.worker(queues, { config: { leaseMs: 600 } });
      const { value, output } = await captureOutput(async () => {
        const long = h.deliver(queues, worker);
        await sleep(1_300);
        // WHEN, past the lease and the visibility timeout, a rival job for the same account arrives
        const redelivered = await h.receive(queues.url, 10, 0);
        await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'long-2', payload: {} }));
        const rival = await h.deliver(queues, worker);
        return { long: await long, redelivered, rival };
      });
      // THEN the heartbeat kept the message hidden and the lock held; the rival was told to back off
      assert.equal(value.redelivered.length, 0, 'the long job\'s message did not reappear');
      assert.equal(value.rival.failed.size, 1);
      assert.equal(metricTotal(output, METRICS.retries, { reason: 'lock-busy' }), 1);
      assert.equal(metricTotal(output, METRICS.lockContention), 1);
      assert.deepEqual(value.long.response, { batchItemFailures: [] }, 'the long job committed after its heartbeats');
    } finally {
      h.partner.setDelay(0);
    }
    await h.drain(queues, h.worker(queues));
    assert.equal(((await h.account(accountId))?.profile as { syncedBy?: string }).syncedBy, 'long-2');
  });

  it('a job behind a held lock tries again after its backoff, not after the holder\'s whole lease: it runs soon after the lock is released', async () => {
    // GIVEN a sync holding an account's lock under a 30 s lease for 0.8 s (a holder that heartbeats keeps its lease a whole term ahead)
    const queues = await h.queues({ visibilityTimeoutSeconds: 30 });
    const accountId = 'acc-released';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues));
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'released-1', payload: {} }));
    h.partner.setDelay(800);
    const worker = h.worker(queues, { config: { leaseMs: 30_000 } });
    try {
      const holder = h.deliver(queues, worker);
      await sleep(300);
      // WHEN a rival sync for the same account meets the lock
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'released-2', payload: {} }));
      const { value: rival, output } = await captureOutput(() => h.deliver(queues, worker));
      assert.equal(rival.failed.size, 1, 'the rival met the lock and is retried');
      assert.equal(metricTotal(output, METRICS.lockContention), 1);
      assert.ok(metricTotal(output, METRICS.lockWaitMs) <= 2_000, `waits its backoff, not the ~30 s left of the lease: ${metricTotal(output, METRICS.lockWaitMs)} ms`);
      assert.deepEqual((await holder).response, { batchItemFailures: [] });
    } finally {
      h.partner.setDelay(0);
    }
    // THEN it is back within its first backoff (1 s here) and runs, ~29 s before the holder's lease would have ended
    const syncedBy = async () => ((await h.account(accountId))?.profile as { syncedBy?: string } | undefined)?.syncedBy;
    assert.equal(await syncedBy(), 'released-1');
    for (let round = 0; round < 6 && (await syncedBy()) !== 'released-2'; round += 1) await h.deliver(queues, worker);
    assert.equal(await syncedBy(), 'released-2');
    assert.deepEqual(await h.deadLetters(queues), []);
  });

  it('a job still meeting a held lock on its last receive is requeued, not dead-lettered: it runs once the lock is free', async () => {
    // GIVEN a queue that redrives after a single receive, and a sync holding the account's lock for 1.5 s
    const queues = await h.queues({ visibilityTimeoutSeconds: 1, maxReceiveCount: 1 });
    const accountId = 'acc-queued';
    const config = { leaseMs: 3_000, maxReceiveCount: 1 };
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues, { config }));
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'held-1', payload: {} }));
    h.partner.setDelay(1_500);
    try {
      const worker = h.worker(queues, { config });
      const { value, output } = await captureOutput(async () => {
        const holder = h.deliver(queues, worker);
        await sleep(300);
        // WHEN a rival sync for the same account arrives and meets the lock on its only receive
        await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, idempotencyKey: 'held-2', payload: {} }));
        const rival = await h.deliver(queues, worker);
        return { holder: await holder, rival };
      });
      // THEN it is sent again as a new message (delayed by the holder's lease) rather than dead-lettered
      assert.equal(value.rival.records.length, 1);
      assert.deepEqual(value.rival.response, { batchItemFailures: [] }, 'deleted, not failed: its copy carries on');
      assert.equal(metricTotal(output, METRICS.lockRequeues), 1);
      assert.equal(metricTotal(output, METRICS.lockContention), 1);
      assert.deepEqual(value.holder.response, { batchItemFailures: [] });
    } finally {
      h.partner.setDelay(0);
    }
    // AND once the copy's delay is over, it runs: nothing reached the DLQ
    await h.drain(queues, h.worker(queues, { config }));
    assert.equal(((await h.account(accountId))?.profile as { syncedBy?: string }).syncedBy, 'held-2');
    assert.deepEqual(await h.deadLetters(queues), []);
  });
});
