import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { accountKey } from '../../workloads/accounts/index.ts';
import { startLocalCloud, type LocalCloud } from '../../local/cloud/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { startPartnerApi, type PartnerApi } from '../../workloads/accounts/local/partner-api.ts';
import { useEngines } from '../helpers/engines.ts';
import { exitOf, runNode, waitForOutput } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


describe('local cloud: the synthesized stack on the engines', () => {
  const local = useEngines();
  let partner: PartnerApi;
  before(async () => void (partner = await startPartnerApi()));
  after(async () => partner?.stop());

  it('adding a queue + worker to the CDK app makes it appear and run locally, with no change under local/', async () => {
    // GIVEN an app that defines one more queue and worker than the shipped one
    const cloud = await startLocalCloud({
      engines: local.engines,
      appFile: fileURLToPath(new URL('../fixtures/app-with-extra-worker.ts', import.meta.url)),
      context: { PARTNER_API_URL: partner.url },
    });
    try {
      // THEN its queue, DLQ, function and mapping exist locally
      const audit = cloud.resources.queues.find((queue) => queue.logicalId.startsWith('AuditQueue'));
      assert.ok(audit, `queues: ${cloud.resources.queues.map((q) => q.logicalId).join(', ')}`);
      assert.ok(cloud.resources.queues.some((queue) => queue.logicalId.startsWith('AuditDeadLetterQueue')));
      const fn = cloud.resources.functions.find((f) => f.logicalId.startsWith('AuditWorkerFunction'));
      assert.ok(fn);
      assert.equal(fn.environment.WORKER_VERSION, 'audit-1');
      assert.ok(cloud.resources.mappings.some((m) => m.eventSourceArn === audit.arn && m.functionName === fn.name));
      // AND a job sent to it is processed by its worker
      const state = cloud.resources.tables.find((t) => t.logicalId.startsWith('TablesState'));
      await local.sqs.send(new SendMessageCommand({
        QueueUrl: audit.url, MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-audit', payload: { amount: 7 } })),
      }));
      await waitFor('the extra worker to credit the account', async () => {
        const out = await local.documents.send(new GetCommand({ TableName: state?.name, Key: { pk: accountKey('acc-audit') }, ConsistentRead: true }));
        return out.Item?.balance === 7;
      }, 20_000, 250);
    } finally {
      await cloud.stop({ graceMs: 2_000 });
    }
  });

  it('SIGTERM during a busy run loses no message and applies no effect twice', async () => {
    // GIVEN a local cloud in its own process, busy with 300 credits over 20 accounts
    const child = () => runNode(fileURLToPath(new URL('../helpers/cloud-child.ts', import.meta.url)), [], {
      BALLAST_TEST_ENGINES: JSON.stringify({
        dynamodb: { endpoint: local.engines.dynamodb.endpoint },
        sqs: { endpoint: local.engines.sqs.endpoint },
        redis: { endpoint: local.engines.redis.endpoint, port: local.engines.redis.port },
      }),
      BALLAST_TEST_CONTEXT: JSON.stringify({ PARTNER_API_URL: partner.url }),
    });
    const first = child();
    const ready = await waitForOutput(first, /READY (\{.*\})/, 60_000);
    const outputs = JSON.parse(/READY (\{.*\})/.exec(ready)?.[1] ?? '{}') as Record<string, string>;
    const expected = new Map<string, number>();
    for (let batch = 0; batch < 30; batch += 1) {
      const entries = Array.from({ length: 10 }, (_, i) => {
        const accountId = `acc-term-${(batch * 10 + i) % 20}`;
        const amount = batch * 10 + i + 1;
        expected.set(accountId, (expected.get(accountId) ?? 0) + amount);
        return { Id: String(i), MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: accountId, payload: { amount } })) };
      });
      await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: outputs.JobsQueueUrl, Entries: entries }));
    }
    await sleep(1_500);
    // WHEN it is terminated mid-run
    first.kill('SIGTERM');
    assert.equal(await exitOf(first, 30_000), 0, 'exits 0 after draining');
    const left = await queueCounts(local.sqs, outputs.JobsQueueUrl as string);
    // THEN a restarted cloud drains the rest, and every balance is exactly its credits
    const second = child();
    await waitForOutput(second, /READY/, 60_000);
    try {
      await waitFor('the restarted cloud to drain the queue', async () => {
        const depth = await queueCounts(local.sqs, outputs.JobsQueueUrl as string);
        return depth.visible + depth.inFlight + depth.delayed === 0;
      }, 90_000, 250);
    } finally {
      second.kill('SIGTERM');
      await exitOf(second, 30_000);
    }
    const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}));
    for (const [accountId, balance] of expected) {
      const out = await documents.send(new GetCommand({ TableName: outputs.StateTableName, Key: { pk: accountKey(accountId) }, ConsistentRead: true }));
      assert.equal(out.Item?.balance, balance, `${accountId} (messages left at SIGTERM: ${JSON.stringify(left)})`);
    }
    assert.equal((await queueCounts(local.sqs, outputs.JobsDeadLetterQueueUrl as string)).visible, 0, 'nothing dead-lettered');
  });

  it('runs the CodeDeploy pre-traffic hook as a deployment would: it invokes the worker\'s readiness probe', async () => {
    // GIVEN a healthy stack, and one whose cache endpoint answers nothing
    const healthy = await startLocalCloud({ engines: local.engines, context: { PARTNER_API_URL: partner.url } });
    assert.ok(existsSync(healthy.assemblyDir));
    await healthy.stop({ graceMs: 1_000 });
    assert.equal(existsSync(healthy.assemblyDir), false, 'stop() removes the synthesized assembly');
    const noCache = { ...local.engines, redis: { endpoint: 'redis://127.0.0.1:1', port: 1 } };
    const broken = await startLocalCloud({ engines: noCache, context: { PARTNER_API_URL: partner.url } });
    await broken.stop({ graceMs: 1_000 });
    // THEN the hook passes the first and fails the second, before any traffic
    assert.deepEqual(healthy.preTrafficChecks.map((check) => check.status), ['Succeeded']);
    assert.match(healthy.preTrafficChecks[0]?.functionName ?? '', /WorkerFunction/);
    assert.deepEqual(broken.preTrafficChecks.map((check) => check.status), ['Failed']);
  });

  it('serves the read API on its Function URL: miss, then hit, 404 and 400', async () => {
    const cloud: LocalCloud = await startLocalCloud({ engines: local.engines, context: { PARTNER_API_URL: partner.url } });
    try {
      const sqs = new SQSClient({});
      await sqs.send(new SendMessageCommand({
        QueueUrl: cloud.resources.outputs.JobsQueueUrl,
        MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-url', payload: { amount: 3 } })),
      }));
      const url = cloud.resources.outputs.ReadApiUrl as string;
      let first: Response | undefined;
      await waitFor('the account to be readable', async () => (first = await fetch(`${url}accounts/acc-url`)).status === 200, 20_000, 250);
      assert.equal(first?.headers.get('x-cache'), 'miss');
      assert.equal(((await first?.json()) as { balance: number }).balance, 3);
      assert.equal((await fetch(`${url}accounts/acc-url`)).headers.get('x-cache'), 'hit');
      assert.equal((await fetch(`${url}accounts/acc-nobody`)).status, 404);
      assert.equal((await fetch(`${url}accounts/${encodeURIComponent('bad id!')}`)).status, 400);
    } finally {
      await cloud.stop({ graceMs: 2_000 });
    }
  });
});
