import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ACCOUNT_REASONS, JOB_TYPES } from '../../../workloads/accounts/index.ts';
import { METRICS } from '../../../shared/observability/index.ts';
import { captureOutput, metricTotal } from '../../helpers/output.ts';
import { useWorkerHarness } from '../../helpers/worker-harness.ts';
import { JOB_CATALOG, registry } from '../../../workloads/registry.ts';

describe('account.transfer: two accounts, one transaction', () => {
  const h = useWorkerHarness();
  const transfer = (from: string, to: string, amount: number, key: string) =>
    h.envelope({ type: JOB_TYPES.transfer, resourceId: from, idempotencyKey: key, payload: { to, amount } });

  it('debits one account and credits the other, each one version up; a duplicate changes nothing', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    await h.send(queues, h.envelope({ resourceId: 'acc-tr-a', idempotencyKey: 'fund-a', payload: { amount: 100 } }));
    await captureOutput(() => h.drain(queues, worker));
    const move = transfer('acc-tr-a', 'acc-tr-b', 30, 'tr-1');
    await h.send(queues, move);
    await h.send(queues, move);
    const { output } = await captureOutput(() => h.drain(queues, worker));
    const [a, b] = [await h.account('acc-tr-a'), await h.account('acc-tr-b')];
    assert.deepEqual([a?.balance, a?.version, b?.balance, b?.version], [70, 2, 30, 1]);
    assert.equal(metricTotal(output, METRICS.processed), 1);
    assert.equal(metricTotal(output, METRICS.duplicates), 1);
  });

  it('refused as insufficient-funds with nothing applied when the source cannot pay', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    await h.send(queues, h.envelope({ resourceId: 'acc-tr-poor', idempotencyKey: 'fund-poor', payload: { amount: 10 } }));
    await captureOutput(() => h.drain(queues, worker));
    await h.send(queues, transfer('acc-tr-poor', 'acc-tr-rich', 11, 'tr-too-much'));
    await captureOutput(() => h.drain(queues, worker));
    const dead = await h.deadLetters(queues);
    assert.deepEqual(dead.map((letter) => letter.reason), [ACCOUNT_REASONS.insufficientFunds]);
    assert.deepEqual([(await h.account('acc-tr-poor'))?.balance, (await h.account('acc-tr-poor'))?.version], [10, 1]);
    assert.equal(await h.account('acc-tr-rich'), undefined, 'the credit half was not applied either');
  });

  it('a transfer to itself is an invalid payload, dead-lettered', async () => {
    const queues = await h.queues();
    await h.send(queues, transfer('acc-tr-self', 'acc-tr-self', 1, 'tr-self'));
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    assert.deepEqual((await h.deadLetters(queues)).map((letter) => letter.reason), ['invalid-payload']);
  });

  it('a ring of transfers over shared accounts in one batch: money is neither created nor lost', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues, { config: { concurrency: 10 } });
    await h.send(queues, h.envelope({ resourceId: 'acc-ring-0', idempotencyKey: 'ring-fund', payload: { amount: 50 } }));
    await captureOutput(() => h.drain(queues, worker));
    // a ring of transfers 0 → 1 → 2 → 0: every record shares an account with the next, so one lane
    for (let round = 0; round < 3; round += 1) {
      for (let i = 0; i < 3; i += 1) await h.send(queues, transfer(`acc-ring-${i}`, `acc-ring-${(i + 1) % 3}`, 5, `ring-${round}-${i}`));
    }
    const { output } = await captureOutput(() => h.drain(queues, worker));
    const balances = await Promise.all([0, 1, 2].map(async (i) => (await h.account(`acc-ring-${i}`))?.balance ?? 0));
    assert.equal(balances.reduce((sum, balance) => sum + balance, 0), 50, `balances ${balances.join(', ')}`);
    assert.equal(metricTotal(output, METRICS.processed) + (await h.deadLetters(queues)).length, 9);
  });

  it('asks the job type for its resources once per record, for both its lane and its claim', async () => {
    const queues = await h.queues();
    const declared = JOB_CATALOG[JOB_TYPES.transfer];
    let calls = 0;
    const catalog = { ...JOB_CATALOG, [JOB_TYPES.transfer]: { ...declared, resources: (job: Parameters<NonNullable<typeof declared.resources>>[0]) => (calls += 1, declared.resources?.(job) ?? []) } };
    await h.send(queues, transfer('acc-tr-once', 'acc-tr-twice', 1, 'tr-once'));
    await captureOutput(() => h.drain(queues, h.worker(queues, { registry: { ...registry, catalog } })));
    assert.equal(calls, 1);
  });
});
