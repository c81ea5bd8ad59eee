import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { accountKey } from '../../shared/jobs/index.ts';
import { startLocalCloud } from '../../local/cloud/index.ts';
import { queueDepth } from '../../local/demo/progress.ts';
import { startPartnerApi } from '../../local/partner-api/server.ts';
import { useEngines } from '../helpers/engines.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('chaos: exactly-once effects while invocations crash and time out', () => {
  const local = useEngines();

  it('400 credits with 15 % of invocations crashing after their work and 5 % timing out: every balance is exact', async () => {
    const partner = await startPartnerApi();
    // GIVEN the stack with faults on: a crash happens after the handler committed, before it returned
    const faults = { crashAfterWorkRate: 0.15, delayPastTimeoutRate: 0.05 };
    const cloud = await startLocalCloud({
      engines: local.engines,
      appFile: fileURLToPath(new URL('../fixtures/app-fast-timeouts.ts', import.meta.url)),
      context: { partnerApiUrl: partner.url },
      faults,
    });
    local.beforeStop(async () => {
      await cloud.stop({ graceMs: 3_000 });
      await partner.stop();
    });
    const { outputs } = cloud.resources;
    const expected = new Map<string, number>();
    for (let batch = 0; batch < 40; batch += 1) {
      const entries = Array.from({ length: 10 }, (_, i) => {
        const accountId = `acc-chaos-${(batch * 10 + i) % 20}`;
        const amount = batch + i + 1;
        expected.set(accountId, (expected.get(accountId) ?? 0) + amount);
        return { Id: String(i), MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: accountId, payload: { amount } })) };
      });
      await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: outputs.JobsQueueUrl, Entries: entries }));
    }
    // WHEN the queue drains (crashed batches come back after the 12 s visibility timeout)
    const startedAtMs = Date.now();
    for (let i = 0; i < 360; i += 1) {
      const depth = await queueDepth(local.sqs, outputs.JobsQueueUrl as string);
      if (depth.visible + depth.inFlight + depth.delayed === 0) break;
      await sleep(500);
    }
    const drainedAfterMs = Date.now() - startedAtMs;
    // THEN no effect was lost or doubled, and nothing was dead-lettered
    for (const [accountId, balance] of expected) {
      const item = await local.documents.send(new GetCommand({ TableName: outputs.StateTableName, Key: { pk: accountKey(accountId) }, ConsistentRead: true }));
      assert.equal(item.Item?.balance, balance, accountId);
    }
    assert.equal((await queueDepth(local.sqs, outputs.JobsDeadLetterQueueUrl as string)).visible, 0);
    const duplicates = cloud.metrics.total('DuplicatesSuppressed');
    assert.ok(duplicates > 0, 'crashes after commit were redelivered and recognised as done');
    console.log(`chaos: 400 credits, crash 15 %, timeout 5 %: drained in ${(drainedAfterMs / 1000).toFixed(1)} s, `
      + `processed ${cloud.metrics.total('JobsProcessed')}, duplicates suppressed ${duplicates}, balances exact`);
  });
});
