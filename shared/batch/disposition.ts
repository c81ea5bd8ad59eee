import { TRACEPARENT_MESSAGE_ATTRIBUTE } from '../tracing/index.ts';
import type { SQSRecord } from 'aws-lambda';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import type { BallastError } from '../errors/index.ts';

/** SQS's cap on a visibility timeout (12 hours). */
const MAX_VISIBILITY_SECONDS = 43_200;
/** SQS allows at most this many message attributes on a message. */
const MAX_MESSAGE_ATTRIBUTES = 10;
/** Ours on every DLQ copy; the producer's attributes keep the rest of the budget (10 - 7 = 3). */
const OWN_ATTRIBUTES = [
  'ballast.reason', 'ballast.error', 'ballast.attempt', 'ballast.workerVersion', 'ballast.source', 'ballast.failedAt', 'ballast.sourceMessageId',
] as const;

export interface BackoffOptions {
  /**
   * Delay before the first retry.
   * @default 2
   */
  readonly baseSeconds?: number;
  /**
   * Upper bound of any delay.
   * @default 300
   */
  readonly maxSeconds?: number;
}

/**
 * Visibility delay for a failed record: exponential in the receive count, capped, with "equal
 * jitter" (half fixed, half random) so retries of one burst drain out like a leaky bucket instead
 * of returning together. `atLeastSeconds` honours a known wait, e.g. a lock's remaining lease.
 */
export function backoffSeconds(attempt: number, options: BackoffOptions = {}, random = Math.random, atLeastSeconds = 0): number {
  const base = options.baseSeconds ?? 2;
  const cap = Math.min(options.maxSeconds ?? 300, MAX_VISIBILITY_SECONDS);
  const exponential = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential / 2 + random() * (exponential / 2);
  return Math.min(cap, Math.max(Math.ceil(jittered), Math.ceil(atLeastSeconds)));
}

/**
 * The DLQ copy of a record: same body, the producer's attributes, and ours saying why
 * (`ballast.reason` is what `ballast dlq list` groups by) and of which source message
 * (`ballast.sourceMessageId`: a redelivery keeps its messageId, so a crash between this send and
 * the delete leaves two copies that `ballast dlq list` and `replay` count as one).
 */
export function deadLetterMessage(
  record: SQSRecord, error: BallastError, envelope: Envelope | undefined, facts: { workerVersion: string; nowMs: number },
): { MessageBody: string; MessageAttributes: Record<string, MessageAttributeValue>; MessageGroupId?: string; MessageDeduplicationId?: string } {
  const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value.slice(0, 1024) || '-' });
  const own: Record<(typeof OWN_ATTRIBUTES)[number], MessageAttributeValue> = {
    'ballast.reason': text(error.reason),
    'ballast.error': text(error.message),
    'ballast.attempt': { DataType: 'Number', StringValue: record.attributes.ApproximateReceiveCount ?? '1' },
    'ballast.workerVersion': text(facts.workerVersion),
    'ballast.source': text(record.eventSourceARN),
    'ballast.failedAt': text(new Date(facts.nowMs).toISOString()),
    'ballast.sourceMessageId': text(record.messageId),
  };
  const producers = Object.entries(record.messageAttributes ?? {})
    .filter(([name]) => !name.startsWith('ballast.'))
    // The trace context first: a replay continues the job's trace even when attributes are cut.
    .sort(([a], [b]) => Number(b === TRACEPARENT_MESSAGE_ATTRIBUTE) - Number(a === TRACEPARENT_MESSAGE_ATTRIBUTE))
    .slice(0, MAX_MESSAGE_ATTRIBUTES - OWN_ATTRIBUTES.length)
    .map(([name, value]): [string, MessageAttributeValue] => [name, {
      DataType: value.dataType,
      ...(value.stringValue !== undefined ? { StringValue: value.stringValue } : {}),
      ...(value.binaryValue !== undefined ? { BinaryValue: Buffer.from(value.binaryValue, 'base64') } : {}),
    }]);
  const fifo = record.eventSourceARN.endsWith('.fifo');
  return {
    MessageBody: record.body,
    MessageAttributes: { ...Object.fromEntries(producers), ...own },
    ...(fifo ? { MessageGroupId: record.attributes.MessageGroupId ?? envelope?.resourceId ?? 'ballast', MessageDeduplicationId: record.messageId } : {}),
  };
}
