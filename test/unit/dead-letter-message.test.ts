import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SQSMessageAttributes } from 'aws-lambda';
import type { Message } from '@aws-sdk/client-sqs';
import { deadLetterMessage } from '../../shared/batch/index.ts';
import { FatalError, REASONS } from '../../shared/errors/index.ts';
import { collapseCopies, countByReason, matches, toDeadLetter } from '../../shared/operations/dlq-messages.ts';
import { jobRecord } from '../helpers/sqs-records.ts';
import { ACCOUNT_REASONS } from '../../workloads/accounts/index.ts';

const facts = { workerVersion: 'v7', nowMs: Date.parse('2026-01-02T03:04:05.000Z') };
const refused = new FatalError(ACCOUNT_REASONS.insufficientFunds, 'balance 5 < 100');
const producerAttributes = (count: number): SQSMessageAttributes => Object.fromEntries(Array.from({ length: count }, (_, i) => [
  `p${i}`, { dataType: 'String', stringValue: `v${i}`, stringListValues: [], binaryListValues: [] },
]));
const ownNames = (attributes: Record<string, unknown>) => Object.keys(attributes).filter((name) => name.startsWith('ballast.')).sort();

describe('deadLetterMessage', () => {
  it('names the source message, so two copies of one delivery can be told apart from two failures', () => {
    // Prepare: one message, received twice (a crash after the DLQ send makes SQS redeliver it with the same messageId).
    const first = jobRecord({ resourceId: 'acc-1' }, { messageId: 'src-1', attempt: 1 });
    const redelivered = { ...first, receiptHandle: 'rh-again', attributes: { ...first.attributes, ApproximateReceiveCount: '2' } };
    const other = jobRecord({ resourceId: 'acc-1' }, { messageId: 'src-2' });
    // Act
    const copies = [first, redelivered, other].map((record) => deadLetterMessage(record, refused, undefined, facts).MessageAttributes);
    // Assess
    assert.deepEqual(copies.map((a) => a['ballast.sourceMessageId']?.StringValue), ['src-1', 'src-1', 'src-2']);
    assert.deepEqual(copies[0]?.['ballast.sourceMessageId'], { DataType: 'String', StringValue: 'src-1' });
    assert.equal(copies[1]?.['ballast.attempt']?.StringValue, '2');
  });

  it('keeps every own attribute and the producer\'s up to SQS\'s limit of 10: 7 are ours, so 3 of the producer\'s are carried over', () => {
    const record = { ...jobRecord({ resourceId: 'acc-1' }), messageAttributes: producerAttributes(10) };
    const { MessageAttributes } = deadLetterMessage(record, refused, undefined, facts);
    assert.equal(Object.keys(MessageAttributes).length, 10);
    assert.deepEqual(ownNames(MessageAttributes), [
      'ballast.attempt', 'ballast.error', 'ballast.failedAt', 'ballast.reason', 'ballast.source', 'ballast.sourceMessageId', 'ballast.workerVersion',
    ]);
    assert.deepEqual(Object.keys(MessageAttributes).filter((name) => !name.startsWith('ballast.')), ['p0', 'p1', 'p2']);
    assert.deepEqual(MessageAttributes.p0, { DataType: 'String', StringValue: 'v0' });
  });

  it('keeps the trace context among the 3 when the producer sent more: a replay continues the job\'s trace', () => {
    const traceparent = { dataType: 'String', stringValue: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', stringListValues: [], binaryListValues: [] };
    const record = { ...jobRecord({ resourceId: 'acc-1' }), messageAttributes: { ...producerAttributes(6), traceparent } };
    const { MessageAttributes } = deadLetterMessage(record, refused, undefined, facts);
    assert.deepEqual(Object.keys(MessageAttributes).filter((name) => !name.startsWith('ballast.')), ['traceparent', 'p0', 'p1']);
  });

  it('carries fewer producer attributes over as they are, and never the producer\'s own ballast.* ones', () => {
    const spoofed = { 'ballast.sourceMessageId': { dataType: 'String', stringValue: 'forged', stringListValues: [], binaryListValues: [] } };
    const record = { ...jobRecord({ resourceId: 'acc-1' }, { messageId: 'src-3' }), messageAttributes: { ...producerAttributes(2), ...spoofed } };
    const { MessageAttributes } = deadLetterMessage(record, refused, undefined, facts);
    assert.equal(Object.keys(MessageAttributes).length, 9);
    assert.equal(MessageAttributes['ballast.sourceMessageId']?.StringValue, 'src-3');
    assert.equal(MessageAttributes['ballast.reason']?.StringValue, ACCOUNT_REASONS.insufficientFunds);
    assert.equal(MessageAttributes['ballast.failedAt']?.StringValue, '2026-01-02T03:04:05.000Z');
  });
});

describe('collapseCopies', () => {
  // What ReceiveMessage returns for a DLQ copy the worker sent (its attributes) or one SQS redrove (none).
  const received = (messageId: string, record: Parameters<typeof deadLetterMessage>[0] | undefined, nowMs = facts.nowMs): Message => ({
    MessageId: messageId,
    ReceiptHandle: `rh-${messageId}`,
    Body: record?.body ?? '{}',
    Attributes: { SentTimestamp: String(facts.nowMs - 600_000), ApproximateReceiveCount: '1' },
    MessageAttributes: record ? deadLetterMessage(record, refused, undefined, { ...facts, nowMs }).MessageAttributes : undefined,
  });

  it('makes one entry of the copies of one source message: the earliest, with copies counted', () => {
    const source = jobRecord({ resourceId: 'acc-1' }, { messageId: 'src-1' });
    const letters = [received('dlq-b', source, facts.nowMs + 5_000), received('dlq-a', source), received('dlq-c', jobRecord({ resourceId: 'acc-2' }))]
      .map(toDeadLetter);
    const sources = collapseCopies(letters);
    assert.deepEqual(sources.map((s) => [s.letter.messageId, s.letter.copies, s.all.map((l) => l.messageId)]), [
      ['dlq-a', 2, ['dlq-a', 'dlq-b']],
      ['dlq-c', 1, ['dlq-c']],
    ]);
    assert.deepEqual(countByReason(sources.map((s) => s.letter)).map((r) => [r.reason, r.count, r.copies]), [[ACCOUNT_REASONS.insufficientFunds, 2, 3]]);
    const byAnyCopy = sources.filter((s) => matches(s, { messageIds: ['dlq-b'] }, facts.nowMs));
    assert.deepEqual(byAnyCopy.map((s) => s.letter.messageId), ['dlq-a'], 'any copy\'s messageId selects the source message');
  });

  it('takes a message without ballast attributes (SQS redrove it, keeping its MessageId) as its own source', () => {
    const [redriven, workerCopy] = [received('src-9', undefined), received('dlq-9', jobRecord({ resourceId: 'acc-9' }, { messageId: 'src-9' }))].map(toDeadLetter);
    assert.equal(redriven?.sourceMessageId, 'src-9');
    assert.equal(workerCopy?.sourceMessageId, 'src-9');
    const [only] = collapseCopies([workerCopy!, redriven!]);
    assert.deepEqual([only?.letter.messageId, only?.letter.copies], ['src-9', 2], 'the redriven one was sent first, so it is the earliest');
  });
});
