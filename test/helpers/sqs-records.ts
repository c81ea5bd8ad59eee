import type { SQSRecord } from 'aws-lambda';
import { createEnvelope, type EnvelopeInput } from '../../shared/envelope/index.ts';

let sequence = 0;

/** An SQS record as Lambda delivers it, for pure pipeline tests (no queue involved). */
export function sqsRecord(body: string, overrides: { attempt?: number; groupId?: string; fifo?: boolean; messageId?: string } = {}): SQSRecord {
  sequence += 1;
  const fifo = overrides.fifo ?? overrides.groupId !== undefined;
  return {
    messageId: overrides.messageId ?? `m-${sequence}`,
    receiptHandle: `rh-${sequence}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(overrides.attempt ?? 1),
      SentTimestamp: '0',
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: '0',
      ...(overrides.groupId !== undefined ? { MessageGroupId: overrides.groupId } : {}),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:jobs${fifo ? '.fifo' : ''}`,
    awsRegion: 'us-east-1',
  };
}

/** A record carrying a valid envelope. */
export function jobRecord(input: Partial<EnvelopeInput> & { resourceId: string }, overrides: Parameters<typeof sqsRecord>[1] = {}): SQSRecord {
  const envelope = createEnvelope({ type: 'account.credit', payload: { amount: 1 }, ...input });
  return sqsRecord(JSON.stringify(envelope), overrides);
}
