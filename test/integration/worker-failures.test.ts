import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { REASONS } from '../../shared/errors/index.ts';
import { ACCOUNT_REASONS, JOB_TYPES } from '../../workloads/accounts/index.ts';
import { METRICS } from '../../shared/observability/index.ts';
import { captureOutput, metricTotal, type CapturedOutput } from '../helpers/output.ts';
import { useWorkerHarness } from '../helpers/worker-harness.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The failure left its trace: a log line with its reason and one count of its metric. */
function assertReported(output: CapturedOutput, metric: string, reason: string) {
  assert.equal(metricTotal(output, metric, { reason }), 1, `${metric}{reason=${reason}}`);
  const line = output.logs.find((log) => log.reason === reason);
  assert.ok(line, `a log line with reason ${reason}`);
  for (const key of ['messageId', 'attempt', 'workerVersion']) assert.ok(key in line, `log line carries ${key}`);
}

describe('worker: failures are classified, dead-lettered with reasons, logged and counted', () => {
  const h = useWorkerHarness();

  it('a batch of successes writes no log line and one metric value per outcome kind; a failure brings its line and the batch summary', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    // GIVEN three credits, one of them sent twice by its producer, in one batch
    const repeated = h.envelope({ resourceId: 'acc-quiet-1', idempotencyKey: 'quiet-1', payload: { amount: 1 } });
    for (const envelope of [repeated, repeated, h.envelope({ resourceId: 'acc-quiet-2', payload: { amount: 2 } }), h.envelope({ resourceId: 'acc-quiet-3', payload: { amount: 3 } })]) {
      await h.send(queues, envelope);
    }
    // WHEN the worker takes them
    const quiet = (await captureOutput(() => h.deliver(queues, worker))).output;
    // THEN nothing is logged at INFO, and each kind of outcome is one value of its metric
    assert.deepEqual(quiet.logs, []);
    const values = (name: string) => quiet.metrics.filter((doc) => name in doc).map((doc) => doc[name]);
    assert.deepEqual([values(METRICS.processed), values(METRICS.duplicates)], [[3], [1]]);
    // AND WHEN a batch holds a success and a poison message
    await h.send(queues, h.envelope({ resourceId: 'acc-quiet-4', payload: { amount: 4 } }));
    await h.send(queues, '{"not": "an envelope"}');
    const loud = (await captureOutput(() => h.deliver(queues, worker))).output;
    // THEN the failure has its own line, the batch its summary, the success still no line
    assert.deepEqual(loud.logs.map((log) => log.message).sort(), ['batch done', 'job sent to DLQ']);
    assert.deepEqual(
      (({ records, processed, duplicates, retried, deadLettered }) => ({ records, processed, duplicates, retried, deadLettered }))(loud.logs.find((log) => log.message === 'batch done') as Record<string, unknown>),
      { records: 2, processed: 1, duplicates: 0, retried: 0, deadLettered: 1 },
    );
  });

  it('idempotency key reused with another payload → DLQ idempotency-key-reused', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    await h.send(queues, h.envelope({ resourceId: 'acc-reuse', idempotencyKey: 'order-7', payload: { amount: 100 } }));
    await h.deliver(queues, worker);
    await h.send(queues, h.envelope({ resourceId: 'acc-reuse', idempotencyKey: 'order-7', payload: { amount: 900 } }));
    const { value, output } = await captureOutput(() => h.deliver(queues, worker));
    assert.deepEqual(value.response, { batchItemFailures: [] }, 'dead-lettered, so deleted from the source');
    assert.deepEqual((await h.deadLetters(queues)).map((m) => m.reason), [REASONS.idempotencyKeyReused]);
    assert.equal((await h.account('acc-reuse'))?.balance, 100);
    assertReported(output, METRICS.sentToDlq, REASONS.idempotencyKeyReused);
  });

  it('the same idempotency key on another account is refused as reused, never dropped as a duplicate', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    // GIVEN a key used for account A (in one batch) and then for account B, in the same and in a later batch
    await h.send(queues, h.envelope({ resourceId: 'acc-key-a', idempotencyKey: 'invoice-1', payload: { amount: 500 } }));
    await h.send(queues, h.envelope({ resourceId: 'acc-key-b', idempotencyKey: 'invoice-1', payload: { amount: 500 } }));
    await h.drain(queues, worker);
    await h.send(queues, h.envelope({ resourceId: 'acc-key-c', idempotencyKey: 'invoice-1', payload: { amount: 500 } }));
    await h.drain(queues, worker);
    // THEN exactly one account got the money and the other two are in the DLQ with the reason
    const balances = await Promise.all(['acc-key-a', 'acc-key-b', 'acc-key-c'].map(async (id) => (await h.account(id))?.balance ?? 0));
    assert.deepEqual(balances.sort(), [0, 0, 500]);
    assert.deepEqual((await h.deadLetters(queues)).map((m) => m.reason), [REASONS.idempotencyKeyReused, REASONS.idempotencyKeyReused]);
  });

  it('a claimed job whose commit is refused by a business rule gives its claim and lock back', async () => {
    const queues = await h.queues();
    // GIVEN a profile sync for an account that does not exist: the partner answers, the commit's condition fails
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: 'acc-missing', idempotencyKey: 'sync-missing', payload: {} }));
    await h.deliver(queues, h.worker(queues));
    // THEN it is dead-lettered, and neither its IN_PROGRESS record nor the account's lock stays behind
    assert.deepEqual((await h.deadLetters(queues)).map((m) => m.reason), [ACCOUNT_REASONS.accountNotFound]);
    const control = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    const left = control.Items?.filter((item) => item.pk === 'idem#sync-missing' || (item.pk === 'lock#acc-missing' && item.ownerToken !== undefined));
    assert.deepEqual(left, []);
  });

  it('a malformed body → DLQ invalid-envelope, with the original body and error attributes', async () => {
    const queues = await h.queues();
    await h.send(queues, '{"schemaVersion":"1.0","type":"account.credit"');
    const { output } = await captureOutput(() => h.deliver(queues, h.worker(queues)));
    const [dead] = await h.deadLetters(queues);
    assert.equal(dead?.reason, REASONS.invalidEnvelope);
    assert.equal(dead?.body, '{"schemaVersion":"1.0","type":"account.credit"');
    assert.match(dead?.attributes?.['ballast.error']?.StringValue ?? '', /body is not JSON/);
    assert.equal(dead?.attributes?.['ballast.workerVersion']?.StringValue, 'test-1');
    assertReported(output, METRICS.sentToDlq, REASONS.invalidEnvelope);
  });

  it('an unknown major version is retried, then dead-lettered as incompatible-version on the last receive', async () => {
    const queues = await h.queues({ maxReceiveCount: 3 });
    const worker = h.worker(queues, { config: { maxReceiveCount: 2 } });
    await h.send(queues, JSON.stringify({ ...h.envelope({ resourceId: 'acc-v9' }), schemaVersion: '9.0' }));
    const { value: first, output: retried } = await captureOutput(() => h.deliver(queues, worker));
    assert.equal(first.response?.batchItemFailures.length, 1, 'first receive: reported for retry');
    assertReported(retried, METRICS.retries, REASONS.incompatibleVersion);
    assert.deepEqual(await h.deadLetters(queues), []);

    let second = await h.deliver(queues, worker);
    for (let i = 0; i < 10 && second.records.length === 0; i += 1) {
      await sleep(300); // the retry backoff (1–2 s) hides it for a moment
      second = await h.deliver(queues, worker);
    }
    assert.equal(second.records[0]?.attributes.ApproximateReceiveCount, '2');
    assert.deepEqual((await h.deadLetters(queues)).map((m) => m.reason), [REASONS.incompatibleVersion]);
  });

  it('a debit past the balance → DLQ insufficient-funds, balance untouched', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    await h.send(queues, h.envelope({ resourceId: 'acc-poor', payload: { amount: 50 } }));
    await h.deliver(queues, worker);
    await h.send(queues, h.envelope({ type: JOB_TYPES.debit, resourceId: 'acc-poor', payload: { amount: 80 } }));
    const { output } = await captureOutput(() => h.deliver(queues, worker));
    assert.deepEqual((await h.deadLetters(queues)).map((m) => m.reason), [ACCOUNT_REASONS.insufficientFunds]);
    const account = await h.account('acc-poor');
    assert.equal(account?.balance, 50);
    assert.equal(account?.version, 1);
    assertReported(output, METRICS.sentToDlq, ACCOUNT_REASONS.insufficientFunds);
  });

  it('a stale version update is rejected → DLQ stale-version', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    for (const amount of [10, 20]) await h.send(queues, h.envelope({ resourceId: 'acc-stale', payload: { amount } }));
    await h.drain(queues, worker);
    // The producer saw version 1 and conditions its debit on it; the account is at version 2 now.
    await h.send(queues, h.envelope({ type: JOB_TYPES.debit, resourceId: 'acc-stale', payload: { amount: 5, expectedVersion: 1 } }));
    const { output } = await captureOutput(() => h.deliver(queues, worker));
    const [dead] = await h.deadLetters(queues);
    assert.equal(dead?.reason, REASONS.staleVersion);
    assert.match(dead?.attributes?.['ballast.error']?.StringValue ?? '', /at version 2, the job expected 1/);
    assert.equal((await h.account('acc-stale'))?.balance, 30);
    assertReported(output, METRICS.sentToDlq, REASONS.staleVersion);
  });

  it('deadline guard: with little remaining time, unstarted records are reported as failures and none is half-done', async () => {
    const queues = await h.queues();
    const accounts = ['acc-dl-1', 'acc-dl-2', 'acc-dl-3', 'acc-dl-4'];
    for (const id of accounts) await h.send(queues, h.envelope({ resourceId: id, payload: { amount: 1 } }));
    await h.drain(queues, h.worker(queues));
    for (const id of accounts) await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: id, payload: {} }));
    h.partner.setDelay(400);
    try {
      // One record at a time, ≥ 400 ms each, 1.7 s to live, 1 s margin: at most two can start.
      const worker = h.worker(queues, { config: { concurrency: 1, deadlineMarginMs: 1_000 } });
      const { value, output } = await captureOutput(() => h.deliver(queues, worker, { timeoutMs: 1_700 }));
      assert.equal(value.records.length, 4);
      const processed = metricTotal(output, METRICS.processed);
      const notStarted = metricTotal(output, METRICS.retries, { reason: REASONS.deadline });
      assert.ok(processed >= 1 && processed <= 2, `processed ${processed}`);
      assert.equal(processed + notStarted, 4, 'every record either completed or never started');
      assert.equal(value.response?.batchItemFailures.length, notStarted);
    } finally {
      h.partner.setDelay(0);
    }
    const synced = await Promise.all(accounts.map(async (id) => (await h.account(id))?.profile !== undefined));
    assert.ok(synced.filter(Boolean).length >= 1 && synced.filter(Boolean).length <= 2);
    const control = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    assert.deepEqual(control.Items?.filter((item) => item.status === 'IN_PROGRESS' || item.ownerToken !== undefined), [],
      'no claim or lock left behind');
  });

  it('FIFO: a failing message holds back only its own group; other groups complete, order is kept', async () => {
    const queues = await h.queues({ fifo: true, visibilityTimeoutSeconds: 30 });
    for (const id of ['acc-f1', 'acc-f2']) await h.send(queues, h.envelope({ resourceId: id, payload: { amount: 5 } }), { groupId: 'setup' });
    await h.drain(queues, h.worker(queues));
    h.partner.failNext('acc-f1', 1, 503);
    await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: 'acc-f1', payload: {} }), { groupId: 'g1' });
    await h.send(queues, h.envelope({ type: JOB_TYPES.debit, resourceId: 'acc-f1', payload: { amount: 5, expectedVersion: 2 } }), { groupId: 'g1' });
    for (const amount of [1, 2, 3]) await h.send(queues, h.envelope({ resourceId: 'acc-f2', payload: { amount } }), { groupId: 'g2' });
    const worker = h.worker(queues);

    const first = await h.deliver(queues, worker);
    assert.equal(first.failed.size, 1, 'the sync of g1 failed (partner 503)');
    // While g1's failed head backs off, only g2 is delivered.
    const second = await h.deliver(queues, worker);
    assert.ok(second.records.length > 0);
    assert.ok(second.records.every((record) => JSON.parse(record.body).resourceId === 'acc-f2'), 'g1 is held back');
    await h.drain(queues, worker);
    assert.equal((await h.account('acc-f2'))?.balance, 11);
    const f1 = await h.account('acc-f1');
    // Had the debit overtaken the sync it would have met version 1 and been dead-lettered as stale.
    assert.equal(f1?.balance, 0, 'the debit (expecting version 2) ran after the sync');
    assert.equal(f1?.version, 3);
    assert.deepEqual(await h.deadLetters(queues), []);
  });
});
