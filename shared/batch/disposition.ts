import type { SQSRecord } from 'aws-lambda';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import type { BallastError } from '../errors/index.ts';

/** SQS's cap on a visibility timeout (12 hours). */
const MAX_VISIBILITY_SECONDS = 43_200;
/** SQS allows at most 10 message attributes; ours take this many, the producer's keep the rest. */
const OWN_ATTRIBUTES = 6;

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
 * (`ballast.reason` is what `ballast dlq list` groups by).
 */
export function deadLetterMessage(
  record: SQSRecord, error: BallastError, envelope: Envelope | undefined, facts: { workerVersion: string; nowMs: number },
): { MessageBody: string; MessageAttributes: Record<string, MessageAttributeValue>; MessageGroupId?: string; MessageDeduplicationId?: string } {
  const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value.slice(0, 1024) || '-' });
  const own: Record<string, MessageAttributeValue> = {
    'ballast.reason': text(error.reason),
    'ballast.error': text(error.message),
    'ballast.attempt': { DataType: 'Number', StringValue: record.attributes.ApproximateReceiveCount ?? '1' },
    'ballast.workerVersion': text(facts.workerVersion),
    'ballast.source': text(record.eventSourceARN),
    'ballast.failedAt': text(new Date(facts.nowMs).toISOString()),
  };
  const producers = Object.entries(record.messageAttributes ?? {})
    .filter(([name]) => !name.startsWith('ballast.'))
    .slice(0, 10 - OWN_ATTRIBUTES)
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
