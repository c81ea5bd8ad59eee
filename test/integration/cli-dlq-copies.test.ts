import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type Message,
} from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { deadLetterMessage } from '../../shared/batch/index.ts';
import { FatalError, REASONS, TransientError, type BallastError } from '../../shared/errors/index.ts';
import { JOB_CATALOG, job } from '../fixtures/workloads/registry.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { listDeadLetters, replayDeadLetters, type DlqLocation } from '../../shared/operations/dlq.ts';
import { queueArn, readMessages } from '../../shared/operations/queues.ts';
import { LOCAL_REGION } from '../../local/engines/index.ts';
import { toSqsRecord } from '../../local/lambda/sqs-records.ts';
import { eventually, useCliFixture, type RunningCloud } from '../helpers/cli-fixture.ts';

interface ListedJson {
  total: number;
  selected: number;
  copies: number;
  reasons: { reason: string; count: number; copies: number }[];
  messages: { messageId: string; sourceMessageId: string; copies: number; reason: string }[];
}

describe('ballast dlq: a source message dead-lettered twice is listed and replayed once', () => {
  const fixture = useCliFixture();
  let running: RunningCloud;
  let location: DlqLocation;
  const copied = job('account.credit', { resourceId: 'acc-copies', idempotencyKey: 'copied-credit', payload: { amount: 3 } });
  let copiedSourceId = '';
  let otherSourceId = '';
  let firstCopyId = '';
  let secondCopyId = '';
  const dlqDepth = async () => (await queueCounts(fixture.local.sqs, running.outputs.JobsDeadLetterQueueUrl)).visible;
  const listJson = async (...args: string[]) => {
    const run = await fixture.cli(['dlq', 'list', ...args, '--json']);
    assert.equal(run.code, 0, run.stderr);
    return JSON.parse(run.stdout) as ListedJson;
  };

  before(async () => {
    running = await fixture.startCloud();
    // No worker: the test plays its part, and what a replay sends stays on the jobs queue to be counted.
    await running.stopFunctions();
    const sqs = fixture.local.sqs;
    const { JobsQueueUrl: jobs, JobsDeadLetterQueueUrl: dlq } = running.outputs;
    location = { sqs, deadLetterQueueUrl: dlq, defaultSourceQueueUrl: jobs };
    const jobsArn = await queueArn(sqs, jobs);
    const receive = async (): Promise<Message> => {
      const out = await sqs.send(new ReceiveMessageCommand({
        QueueUrl: jobs, MaxNumberOfMessages: 1, VisibilityTimeout: 30, WaitTimeSeconds: 2, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'],
      }));
      const message = out.Messages?.[0];
      assert.ok(message, 'a message on the jobs queue');
      return message;
    };
    const deadLetter = async (message: Message, error: BallastError, nowMs: number) => (await sqs.send(new SendMessageCommand({
      QueueUrl: dlq, ...deadLetterMessage(toSqsRecord(message, jobsArn, LOCAL_REGION), error, undefined, { workerVersion: 'v-test', nowMs }),
    }))).MessageId ?? '';
    const outOfRetries = new TransientError(REASONS.dependencyUnavailable, 'partner timed out');
    const t0 = Date.now() - 60_000;

    // The worker dead-letters a delivery, then dies before deleting it ...
    await sqs.send(new SendMessageCommand({ QueueUrl: jobs, MessageBody: JSON.stringify(copied) }));
    const delivery = await receive();
    firstCopyId = await deadLetter(delivery, outOfRetries, t0);
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: jobs, ReceiptHandle: delivery.ReceiptHandle, VisibilityTimeout: 0 }));
    // ... so SQS delivers it again, with the same messageId, and it is dead-lettered again.
    const redelivery = await receive();
    assert.equal(redelivery.MessageId, delivery.MessageId, 'a redelivery keeps the messageId');
    assert.equal(redelivery.Attributes?.ApproximateReceiveCount, '2');
    secondCopyId = await deadLetter(redelivery, outOfRetries, t0 + 30_000);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: jobs, ReceiptHandle: redelivery.ReceiptHandle }));
    copiedSourceId = delivery.MessageId ?? '';

    // Another message, dead-lettered once.
    await sqs.send(new SendMessageCommand({
      QueueUrl: jobs, MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-x', idempotencyKey: 'bad', payload: { amount: -1 } })),
    }));
    const other = await receive();
    await deadLetter(other, new FatalError(REASONS.invalidPayload, 'amount: must be positive'), t0);
    await sqs.send(new DeleteMessageCommand({ QueueUrl: jobs, ReceiptHandle: other.ReceiptHandle }));
    otherSourceId = other.MessageId ?? '';
    await eventually('three DLQ messages', async () => (await dlqDepth()) === 3);
  });

  it('lists one entry per source message: the earliest copy, with its copies counted', async () => {
    const listing = await listDeadLetters(location);
    assert.equal(listing.total, 2);
    assert.equal(listing.selected, 2);
    assert.equal(listing.copies, 3, 'the extra copy is counted, not hidden');
    const bySource = new Map(listing.messages.map((m) => [m.sourceMessageId, m]));
    assert.deepEqual([bySource.get(copiedSourceId)?.messageId, bySource.get(copiedSourceId)?.copies], [firstCopyId, 2]);
    assert.equal(bySource.get(otherSourceId)?.copies, 1);
    assert.deepEqual(listing.reasons.map((r) => [r.reason, r.count, r.copies]).sort(), [['dependency-unavailable', 1, 2], ['invalid-payload', 1, 1]]);

    const json = await listJson();
    assert.deepEqual([json.total, json.selected, json.copies], [2, 2, 3]);
    assert.deepEqual(json.messages.map((m) => [m.sourceMessageId, m.messageId, m.copies]).sort(),
      listing.messages.map((m) => [m.sourceMessageId, m.messageId, m.copies]).sort());

    const text = await fixture.cli(['dlq', 'list']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /2 of 2 dead letter\(s\).*\(3 DLQ messages: 1 extra copy/);
    assert.match(text.stdout, /dependency-unavailable\s+1 \(2 copies\)/);
    assert.match(text.stdout, new RegExp(`${firstCopyId}\\s+2\\s+${copiedSourceId}`));
    assert.equal(await dlqDepth(), 3, 'listing leaves every copy in the DLQ');
  });

  it('shows a source message by the messageId the list prints, or by any of its copies', async () => {
    for (const id of [firstCopyId, secondCopyId]) {
      const shown = await fixture.cli(['dlq', 'show', id, '--json']);
      assert.equal(shown.code, 0, shown.stderr);
      const letter = JSON.parse(shown.stdout) as { messageId: string; sourceMessageId: string; copies: number; envelope: { idempotencyKey: string } };
      assert.deepEqual([letter.messageId, letter.sourceMessageId, letter.copies], [firstCopyId, copiedSourceId, 2]);
      assert.equal(letter.envelope.idempotencyKey, 'copied-credit');
    }
  });

  it('replays a source message once and deletes all its copies after the send', async () => {
    const selection = { filter: { reasons: [REASONS.dependencyUnavailable] }, documents: fixture.local.documents, controlTableName: running.outputs.ControlTableName, catalog: JOB_CATALOG };
    const dry = await replayDeadLetters(location, { ...selection, dryRun: true });
    assert.deepEqual([dry.examined, dry.selected, dry.copies], [2, 1, 3]);
    assert.deepEqual(dry.outcomes.map((o) => [o.messageId, o.sourceMessageId, o.copies, o.decision, o.done]), [[firstCopyId, copiedSourceId, 2, 'replay', false]]);
    const cliDry = await fixture.cli(['dlq', 'replay', '--reason', REASONS.dependencyUnavailable, '--dry-run', '--json']);
    assert.equal(cliDry.code, 0, cliDry.stderr);
    assert.deepEqual((JSON.parse(cliDry.stdout) as { outcomes: { copies: number }[] }).outcomes.map((o) => o.copies), [2]);
    await eventually('a dry run to change nothing', async () => (await dlqDepth()) === 3);

    const run = await replayDeadLetters(location, selection);
    assert.equal(run.replayed, 1);
    assert.equal(run.failed, 0);
    const sentBack = await readMessages(fixture.local.sqs, running.outputs.JobsQueueUrl, { max: 10 });
    assert.equal(sentBack.length, 1, 'sent back once, not once per copy');
    assert.equal(sentBack[0]?.Body, JSON.stringify(copied));
    assert.equal(sentBack[0]?.MessageAttributes?.['ballast.replayOf']?.StringValue, firstCopyId);

    const after = await listJson();
    assert.deepEqual([after.total, after.copies], [1, 1]);
    assert.deepEqual(after.messages.map((m) => m.sourceMessageId), [otherSourceId], 'no copy of the replayed message is left');
  });
});
