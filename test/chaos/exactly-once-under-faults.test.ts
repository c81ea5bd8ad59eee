import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startLocalCloud } from '../../local/cloud/index.ts';
import { balanceMismatches, drainQueue, sendCredits } from '../../local/demo/ledger.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { startPartnerApi } from '../../local/partner-api/server.ts';
import { useEngines } from '../helpers/engines.ts';

describe('chaos: exactly-once effects while invocations crash and time out', () => {
  const local = useEngines();

  it('400 credits with 15 % of invocations crashing after their work and 5 % timing out: every balance is exact', async () => {
    const partner = await startPartnerApi();
    // GIVEN the stack with faults on: a crash happens after the handler committed, before it returned
    const cloud = await startLocalCloud({
      engines: local.engines,
      appFile: fileURLToPath(new URL('../fixtures/app-fast-timeouts.ts', import.meta.url)),
      context: { partnerApiUrl: partner.url },
      faults: { crashAfterWorkRate: 0.15, delayPastTimeoutRate: 0.05 },
    });
    local.beforeStop(async () => {
      await cloud.stop({ graceMs: 3_000 });
      await partner.stop();
    });
    const { outputs } = cloud.resources;
    const expected = await sendCredits({ sqs: local.sqs, queueUrl: outputs.JobsQueueUrl as string, count: 400, accounts: 20, prefix: 'acc-chaos' });
    // WHEN the queue drains (crashed batches come back after the 12 s visibility timeout)
    const drainedAfterMs = await drainQueue(local.sqs, outputs.JobsQueueUrl as string, 180_000);
    // THEN no effect was lost or doubled, and nothing was dead-lettered
    assert.deepEqual(await balanceMismatches(local.documents, outputs.StateTableName as string, expected), []);
    assert.equal((await queueCounts(local.sqs, outputs.JobsDeadLetterQueueUrl as string)).visible, 0);
    const duplicates = cloud.metrics.total('DuplicatesSuppressed');
    assert.ok(duplicates > 0, 'crashes after commit were redelivered and recognised as done');
    console.log(`chaos: 400 credits, crash 15 %, timeout 5 %: drained in ${(drainedAfterMs / 1000).toFixed(1)} s, duplicates suppressed ${duplicates}, balances exact`);
  });
});
