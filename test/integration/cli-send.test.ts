import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, PurgeQueueCommand, ReceiveMessageCommand, DeleteMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { queueCounts } from '../../shared/queues/index.ts';
import { useCliFixture } from '../helpers/cli-fixture.ts';

/**
 * An SQS client whose SendMessageBatch fails the chosen entries (SenderFault false) the first time
 * each is sent: the entries never reach the queue, as when SQS reports an internal error for them.
 */
function flakySqs(failFirstTime: (body: string) => boolean): { sqs: SQSClient; injected: () => number } {
  const sqs = new SQSClient({});
  const failedOnce = new Set<string>();
  let injected = 0;
  sqs.middlewareStack.add((next, context) => async (args) => {
    if (context.commandName !== 'SendMessageBatchCommand') return next(args);
    const input = args.input as { Entries: { Id: string; MessageBody: string }[] };
    const fail = input.Entries.filter((e) => failFirstTime(e.MessageBody) && !failedOnce.has(e.MessageBody));
    for (const e of fail) failedOnce.add(e.MessageBody);
    injected += fail.length;
    const keep = input.Entries.filter((e) => !fail.includes(e));
    const out = keep.length > 0 ? await next({ ...args, input: { ...input, Entries: keep } as typeof args.input }) : { output: { Successful: [], Failed: [], $metadata: {} }, response: {} };
    const output = out.output as { Failed?: unknown[] };
    output.Failed = [...(output.Failed ?? []), ...fail.map((e) => ({ Id: e.Id, SenderFault: false, Code: 'InternalError', Message: 'injected' }))];
    return out;
  }, { step: 'initialize', name: 'injectSendFailures' });
  return { sqs, injected: () => injected };
}

describe('ballast send', () => {
  const fixture = useCliFixture();
  const dir = mkdtempSync(join(tmpdir(), 'ballast-send-'));
  let queueUrl = '';

  it('sends a file of 1,000 jobs, retrying only the injected failures: every job arrives exactly once', async () => {
    const sqs = fixture.local.sqs;
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'cli-send-jobs' }))).QueueUrl ?? '';
    fixture.publish({ JobsQueueUrl: queueUrl, JobsDeadLetterQueueUrl: queueUrl, StateTableName: 's', ControlTableName: 'c', WorkerFunctionName: 'w', InvalidatorFailureQueueUrl: queueUrl });
    const lines = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ type: 'account.credit', resourceId: `acc-${i % 37}`, idempotencyKey: `order-${i}`, payload: { amount: i + 1 } }));
    const file = join(dir, 'jobs.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const flaky = flakySqs((body) => Number(JSON.parse(body).idempotencyKey.slice(6)) % 13 === 0);

    const run = await fixture.cli(['send', file, '--json', '--env', 'local'], { clients: { sqs: flaky.sqs } });

    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout);
    assert.equal(summary.sent, 1000);
    assert.equal(summary.failed, 0);
    assert.equal(flaky.injected(), 77);
    assert.equal(summary.retried, 77);
    const keys = new Map<string, number>();
    for (let empty = 0; empty < 3;) {
      const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }));
      const messages = out.Messages ?? [];
      empty = messages.length === 0 ? empty + 1 : 0;
      for (const m of messages) {
        const key = JSON.parse(m.Body ?? '{}').idempotencyKey as string;
        keys.set(key, (keys.get(key) ?? 0) + 1);
      }
      if (messages.length > 0) await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })) }));
    }
    assert.equal(keys.size, 1000);
    assert.ok([...keys.values()].every((n) => n === 1), 'no job sent twice');
    flaky.sqs.destroy();
  });

  it('bad input: a malformed line, an unknown type and a missing field are named by line, and nothing is sent (exit 2)', async () => {
    const stdin = [
      '{"type":"account.credit","resourceId":"acc-1","idempotencyKey":"good-1","payload":{"amount":5}}',
      '{"type":"account.credit","resourceId":',
      '{"type":"account.refund","resourceId":"acc-1","idempotencyKey":"k","payload":{"amount":5}}',
      '{"type":"account.credit","resourceId":"acc-1","idempotencyKey":"k2","payload":{}}',
    ].join('\n');
    const run = await fixture.cli(['send', '-'], { stdin });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /line 2: not valid JSON/);
    assert.match(run.stderr, /line 3: unknown job type 'account.refund'/);
    assert.match(run.stderr, /line 4: account.credit: payload.amount/);
    assert.equal((await queueCounts(fixture.local.sqs, queueUrl)).visible, 0, 'nothing sent');

    // --skip-invalid sends only the good line, still exits 1
    const partial = await fixture.cli(['send', '--skip-invalid', '--json'], { stdin });
    assert.equal(partial.code, 1);
    assert.equal(JSON.parse(partial.stdout).sent, 1);
    assert.equal((await queueCounts(fixture.local.sqs, queueUrl)).visible, 1);
    await fixture.local.sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl }));
  });

  it('exits 3 when the stack cannot be found', async () => {
    const previous = process.env.BALLAST_LOCAL_FILE;
    process.env.BALLAST_LOCAL_FILE = join(dir, 'missing.json');
    try {
      const run = await fixture.cli(['status']);
      assert.equal(run.code, 3);
      assert.match(run.stderr, /no local cloud is running/);
    } finally {
      process.env.BALLAST_LOCAL_FILE = previous;
    }
  });
});

describe('the ballast bin', () => {
  it('runs as the package bin: --help lists the commands and the exit codes; a missing local cloud exits 3', async () => {
    const { spawnSync } = await import('node:child_process');
    const bin = new URL('../../cli/bin/ballast.ts', import.meta.url).pathname;
    const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(help.status, 0, help.stderr);
    for (const command of ['send', 'dlq', 'status', 'doctor', 'cache']) assert.match(help.stdout, new RegExp(`\\b${command}\\b`));
    assert.match(help.stdout, /3\s+cannot reach the stack/);
    const status = spawnSync(process.execPath, [bin, 'status', '--env', 'local'], {
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, BALLAST_LOCAL_FILE: '/nonexistent/local.json' },
    });
    assert.equal(status.status, 3);
    assert.match(status.stderr, /no local cloud is running .* start one with 'npm start'/);
  });
});
