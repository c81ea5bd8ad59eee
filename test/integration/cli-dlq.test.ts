import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { accountKey } from '../../workloads/accounts/index.ts';
import { job } from '../fixtures/workloads/registry.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { eventually, useCliFixture, type RunningCloud } from '../helpers/cli-fixture.ts';

describe('ballast dlq list | show | replay', () => {
  const fixture = useCliFixture();
  let running: RunningCloud;
  const dlqDepth = async () => (await queueCounts(fixture.local.sqs, running.outputs.JobsDeadLetterQueueUrl)).visible;
  const balance = async (accountId: string) => (await fixture.local.documents.send(new GetCommand({
    TableName: running.outputs.StateTableName, Key: { pk: accountKey(accountId) }, ConsistentRead: true,
  }))).Item?.balance as number | undefined;
  const send = (body: unknown) => fixture.local.sqs.send(new SendMessageCommand({ QueueUrl: running.outputs.JobsQueueUrl, MessageBody: JSON.stringify(body) }));
  const duplicate = job('account.credit', { resourceId: 'acc-dup', idempotencyKey: 'dup-1', payload: { amount: 7 } });

  before(async () => {
    running = await fixture.startCloud();
    // A DLQ with mixed reasons, made by the real worker ...
    await send(job('account.credit', { resourceId: 'acc-poor', idempotencyKey: 'poor-credit', payload: { amount: 5 } }));
    await send(duplicate);
    await eventually('the credits', async () => (await balance('acc-poor')) === 5 && (await balance('acc-dup')) === 7);
    await send(createEnvelope({ type: 'account.debit', resourceId: 'acc-poor', idempotencyKey: 'poor-debit', payload: { amount: 100 } }));
    await send(createEnvelope({ type: 'account.refund', resourceId: 'acc-x', payload: { amount: 1 } }));
    await send(createEnvelope({ type: 'account.credit', resourceId: 'acc-x', idempotencyKey: 'bad', payload: { amount: -1 } }));
    // ... plus a copy of an already completed job, dead-lettered as if its first delivery had died.
    await fixture.local.sqs.send(new SendMessageCommand({
      QueueUrl: running.outputs.JobsDeadLetterQueueUrl, MessageBody: JSON.stringify(duplicate),
      MessageAttributes: {
        'ballast.reason': { DataType: 'String', StringValue: 'dependency-unavailable' },
        'ballast.error': { DataType: 'String', StringValue: 'partner timed out' },
        'ballast.failedAt': { DataType: 'String', StringValue: new Date().toISOString() },
      },
    }));
    await eventually('four dead letters', async () => (await dlqDepth()) === 4);
  });

  it('lists dead letters by reason with counts, and filters them', async () => {
    const all = await fixture.cli(['dlq', 'list', '--json']);
    assert.equal(all.code, 0, all.stderr);
    const listing = JSON.parse(all.stdout) as { total: number; reasons: { reason: string; count: number; types: Record<string, number> }[] };
    assert.equal(listing.total, 4);
    assert.deepEqual(listing.reasons.map((r) => r.reason).sort(), ['dependency-unavailable', 'insufficient-funds', 'invalid-payload', 'unknown-job-type']);
    const filtered = JSON.parse((await fixture.cli(['dlq', 'list', '--reason', 'insufficient-funds', '--json'])).stdout) as { selected: number; messages: { messageId: string; type: string }[] };
    assert.equal(filtered.selected, 1);
    assert.equal(filtered.messages[0]?.type, 'account.debit');
    const byType = JSON.parse((await fixture.cli(['dlq', 'list', '--type', 'account.credit', '--json'])).stdout) as { selected: number };
    assert.equal(byType.selected, 2);
    const none = JSON.parse((await fixture.cli(['dlq', 'list', '--older-than', '1h', '--json'])).stdout) as { selected: number };
    assert.equal(none.selected, 0);

    const shown = await fixture.cli(['dlq', 'show', filtered.messages[0]?.messageId ?? '', '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    const letter = JSON.parse(shown.stdout) as { reason: string; error: string; workerVersion: string; envelope: { idempotencyKey: string } };
    assert.equal(letter.reason, 'insufficient-funds');
    assert.ok(letter.error && letter.workerVersion);
    assert.equal(letter.envelope.idempotencyKey, 'poor-debit');
    assert.equal(await dlqDepth(), 4, 'listing leaves every message in the DLQ');
  });

  it('replays selected messages after re-checking idempotency: completed keys are skipped as duplicates', async () => {
    const selection = ['dlq', 'replay', '--reason', 'insufficient-funds,dependency-unavailable', '--json'];
    const dry = await fixture.cli([...selection, '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    const planned = JSON.parse(dry.stdout) as { outcomes: { idempotencyKey: string; decision: string; done: boolean }[] };
    assert.deepEqual(planned.outcomes.map((o) => [o.idempotencyKey, o.decision, o.done]).sort(), [['dup-1', 'skip-duplicate', false], ['poor-debit', 'replay', false]]);
    assert.equal(await dlqDepth(), 4, 'a dry run changes nothing');

    await send(job('account.credit', { resourceId: 'acc-poor', idempotencyKey: 'top-up', payload: { amount: 200 } }));
    await eventually('the top-up', async () => (await balance('acc-poor')) === 205);
    const run = await fixture.cli(selection);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as { replayed: number; skipped: Record<string, number> };
    assert.equal(report.replayed, 1);
    assert.deepEqual(report.skipped, { 'skip-duplicate': 1 });
    await eventually('the replayed debit', async () => (await balance('acc-poor')) === 105);
    assert.equal(await balance('acc-dup'), 7, 'the duplicate was not applied again');
    assert.equal(await dlqDepth(), 3);
  });

  it('whole-queue replay falls back to the checked replay where StartMessageMoveTask is missing (fauxqs), and says so', async () => {
    const run = await fixture.cli(['dlq', 'replay', '--all', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /no StartMessageMoveTask.*falling back/);
    const report = JSON.parse(run.stdout) as { replayed: number; skipped: Record<string, number>; notice: string };
    assert.equal(report.replayed, 0);
    assert.deepEqual(report.skipped, { 'skip-invalid-payload': 2, 'skip-duplicate': 1 });
    assert.equal(await dlqDepth(), 3);
  });

  it('refuses a replay with neither --all nor a filter (exit 2)', async () => {
    const run = await fixture.cli(['dlq', 'replay']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /choose what to replay/);
  });
});
