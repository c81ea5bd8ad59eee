import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { entityCacheKeys, connectCacheClient, createCacheClient, encodeValue, type CacheClient } from '../../shared/cache/index.ts';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { accountKey } from '../../workloads/accounts/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { eventually, useCliFixture, type RunningCloud } from '../helpers/cli-fixture.ts';
import { toCachedAccount } from '../../workloads/accounts/index.ts';
import { WORKLOADS } from '../fixtures/workloads/registry.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';

interface Check { id: string; verdict: string; evidence: string[]; next: string }

describe('ballast doctor (one local cloud, checks in sequence)', () => {
  const fixture = useCliFixture();
  let running: RunningCloud;
  let redis: CacheClient;
  const credits = (prefix: string, n: number) => Array.from({ length: n }, (_, i) =>
    JSON.stringify({ type: 'account.credit', resourceId: `acc-${prefix}-${i % 3}`, idempotencyKey: `${prefix}-${i}`, payload: { amount: 10 } })).join('\n');
  const doctor = async () => {
    const run = await fixture.cli(['doctor', '--sample-seconds', '1', '--json']);
    const report = JSON.parse(run.stdout) as { verdict: string; checks: Check[] };
    return { code: run.code, report, check: (id: string) => report.checks.find((c) => c.id === id) as Check, stderr: run.stderr };
  };
  const drained = async () => {
    const c = await queueCounts(fixture.local.sqs, running.outputs.JobsQueueUrl);
    return c.visible + c.inFlight + c.delayed === 0;
  };

  before(async () => {
    running = await fixture.startCloud();
    redis = createCacheClient({ url: process.env.BALLAST_CACHE_URL as string, onError: () => undefined });
    await connectCacheClient(redis);
  });
  after(() => redis?.disconnect());

  it('reports healthy on a healthy stack (exit 0, no check failing)', async () => {
    const sent = await fixture.cli(['send', '--json'], { stdin: credits('healthy', 9) });
    assert.equal(sent.code, 0, sent.stderr);
    await eventually('the worker to drain the queue', drained);
    const read = await fetch(`${running.outputs.ReadApiUrl}accounts/acc-healthy-0`);
    assert.equal(read.status, 200);
    const { code, report } = await doctor();
    assert.equal(report.checks.length, 11);
    assert.deepEqual(report.checks.filter((c) => c.verdict === 'fail' || c.verdict === 'warn').map((c) => c.id), [], JSON.stringify(report, null, 2));
    assert.equal(code, 0);
  });

  it('status: depth, in flight, DLQ depth and worker versions, as JSON; exit 0 with an empty DLQ', async () => {
    const run = await fixture.cli(['status', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const status = JSON.parse(run.stdout) as {
      stackName: string; jobs: { visible: number; inFlight: number }; deadLetters: { visible: number };
      workerVersions: { value?: Record<string, number> }; cache: { status: string };
    };
    assert.equal(status.stackName, 'ballast-local');
    assert.equal(status.jobs.visible, 0);
    assert.equal(status.deadLetters.visible, 0);
    assert.ok(Object.keys(status.workerVersions.value ?? {}).length >= 1, `worker versions seen: ${run.stdout}`);
  });

  it('flags an orphan lock past its lease', async () => {
    const nowMs = Date.now();
    const item = { pk: 'lock#acc-orphan', ownerToken: 'crashed-worker', fence: nowMs - 120_000, leaseUntilMs: nowMs - 60_000, expiresAtEpochSeconds: Math.ceil(nowMs / 1000) + 3600 };
    await fixture.local.documents.send(new PutCommand({ TableName: running.outputs.ControlTableName, Item: item }));
    try {
      const { code, check } = await doctor();
      assert.equal(code, 1);
      assert.equal(check('locks').verdict, 'fail');
      assert.match(check('locks').evidence.join('\n'), /lock#acc-orphan owner crashed-worker/);
      assert.match(check('locks').next, /takes the lock over/);
    } finally {
      await fixture.local.documents.send(new DeleteCommand({ TableName: running.outputs.ControlTableName, Key: { pk: 'lock#acc-orphan' } }));
    }
  });

  it('flags a stale cache entry, and `cache check --repair` fixes it', async () => {
    const out = await fixture.local.documents.send(new GetCommand({ TableName: running.outputs.StateTableName, Key: { pk: accountKey('acc-healthy-0') }, ConsistentRead: true }));
    const current = toCachedAccount(out.Item as object);
    const stale = { ...current, balance: current.balance - 10, version: current.version - 1 };
    await redis.hset(entityCacheKeys('account', 'acc-healthy-0', 1).value, 'version', String(stale.version), 'payload', encodeValue(stale));

    const { code, check } = await doctor();
    assert.equal(code, 1);
    assert.equal(check('invalidation').verdict, 'fail');
    assert.match(check('invalidation').evidence.join('\n'), /account acc-healthy-0: cached v\d+ vs table v\d+/);
    assert.match(check('invalidation').next, /cache check --repair/);

    const repair = await fixture.cli(['cache', 'check', '--repair', '--json']);
    assert.equal(repair.code, 0, repair.stderr);
    assert.equal(JSON.parse(repair.stdout).repaired, 1);
    const again = await fixture.cli(['cache', 'check', '--json']);
    assert.equal(again.code, 0);
    assert.equal(JSON.parse(again.stdout).mismatches, 0);

    // one entity only: the stale account is not among the SKUs sampled; an unknown entity is a usage error
    await redis.hset(entityCacheKeys('account', 'acc-healthy-0', 1).value, 'version', String(stale.version), 'payload', encodeValue(stale));
    const skus = await fixture.cli(['cache', 'check', '--entity', 'sku', '--json']);
    assert.deepEqual([skus.code, JSON.parse(skus.stdout).mismatches], [0, 0], skus.stderr);
    const accounts = await fixture.cli(['cache', 'check', '--entity', 'account']);
    assert.equal(accounts.code, 1);
    assert.match(accounts.stdout, /account acc-healthy-0: cached v\d+ table v\d+/);
    const unknown = await fixture.cli(['cache', 'check', '--entity', 'parcel']);
    assert.equal(unknown.code, 2);
    const registered = workloadEntities(WORKLOADS).map((entity) => entity.name).join(', ');
    assert.match(unknown.stderr, new RegExp(`no cached entity 'parcel'; the registered ones are ${registered}$`, 'm'));
    assert.equal((await fixture.cli(['cache', 'check', '--repair'])).code, 0);
  });

  it('flags a growing DLQ with its sampled reasons', async () => {
    await fixture.local.sqs.send(new SendMessageCommand({
      QueueUrl: running.outputs.JobsQueueUrl,
      MessageBody: JSON.stringify(createEnvelope({ type: 'account.refund', resourceId: 'acc-x', payload: { amount: 1 } })),
    }));
    await eventually('the job to be dead-lettered', async () => (await queueCounts(fixture.local.sqs, running.outputs.JobsDeadLetterQueueUrl)).visible === 1);
    const { code, check } = await doctor();
    assert.equal(code, 1);
    assert.equal(check('dlq').verdict, 'fail');
    assert.match(check('dlq').evidence.join('\n'), /unknown-job-type/);
  });

  it('flags a stuck queue when the worker is stopped', async () => {
    await running.stopFunctions();
    const sent = await fixture.cli(['send', '--json'], { stdin: credits('stuck', 6) });
    assert.equal(sent.code, 0, sent.stderr);
    const { code, check } = await doctor();
    assert.equal(code, 1);
    assert.equal(check('processing').verdict, 'fail');
    assert.match(check('processing').evidence.join('\n'), /nothing receives them/);
    assert.match(check('processing').next, /event source mapping/);
  });
});
