import { TRACEPARENT_MESSAGE_ATTRIBUTE } from '../tracing/index.ts';
import type { SQSRecord } from 'aws-lambda';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import { ClaimHeldError, LockBusyError, type BallastError } from '../errors/index.ts';

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
 * of returning together. `atLeastSeconds` honours a known wait, e.g. a job in progress elsewhere (its
 * claim's remaining lease), past the backoff's cap (up to SQS's): met again before that wait ends,
 * the record would only spend a receive. A held lock waits {@link lockWaitSeconds} instead.
 */
export function backoffSeconds(attempt: number, options: BackoffOptions = {}, random = Math.random, atLeastSeconds = 0): number {
  const base = options.baseSeconds ?? 2;
  const cap = Math.min(options.maxSeconds ?? 300, MAX_VISIBILITY_SECONDS);
  const exponential = Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential / 2 + random() * (exponential / 2);
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(Math.ceil(jittered), Math.ceil(atLeastSeconds)));
}

/**
 * Visibility delay for a record whose claim met a lock another job holds (`retryAfterMs`: the
 * holder's remaining lease; unknown when not finite): its backoff, but at most that lease, and at
 * least a second. Not the lease by default: a holder that heartbeats keeps its lease a full term
 * ahead and releases the lock as soon as its job is done, usually long before, so waiting the
 * lease out would leave the resource idle while its jobs queue. A holder that stalled costs the
 * waiter a few receives more, and its last receive requeues it ({@link requeuedMessage}); a record
 * that cannot be requeued ({@link canRequeue}) should wait the lease out instead, or its receives
 * would run out sooner.
 */
export function lockWaitSeconds(attempt: number, retryAfterMs: number, options: BackoffOptions = {}, random = Math.random): number {
  const backoff = backoffSeconds(attempt, options, random);
  if (!Number.isFinite(retryAfterMs)) return backoff;
  return Math.max(1, Math.min(backoff, Math.ceil(Math.max(0, retryAfterMs) / 1000)));
}

/**
 * How long a retried record stays hidden: after a held lock, its {@link lockWaitSeconds} when its
 * last receive can requeue it; otherwise its backoff, but at least what the error says to wait
 * (`retryAfterMs`: a claim's remaining lease).
 */
export function retryDelaySeconds(record: SQSRecord, error: BallastError, options: BackoffOptions = {}, random = Math.random): number {
  const attempt = Number(record.attributes.ApproximateReceiveCount ?? 1);
  const retryAfterMs = Number(error.context.retryAfterMs);
  return error instanceof LockBusyError && canRequeue(record)
    ? lockWaitSeconds(attempt, retryAfterMs, options, random)
    : backoffSeconds(attempt, options, random, Number.isFinite(retryAfterMs) ? retryAfterMs / 1000 : 0);
}

/**
 * Whether a record still meeting a held lock on its last receive can be sent to its queue again
 * ({@link requeuedMessage}): not from a FIFO queue (a copy would jump its group's order and cannot
 * be delayed), and only with room for the attribute the copy carries.
 */
export function canRequeue(record: SQSRecord): boolean {
  if (record.eventSourceARN.endsWith('.fifo')) return false;
  return Object.keys(record.messageAttributes ?? {}).filter((name) => name !== LOCK_WAIT_SINCE_ATTRIBUTE).length < MAX_MESSAGE_ATTRIBUTES;
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
  const producers = sendable(record)
    .filter(([name]) => !name.startsWith('ballast.'))
    // The trace context first: a replay continues the job's trace even when attributes are cut.
    .sort(([a], [b]) => Number(b === TRACEPARENT_MESSAGE_ATTRIBUTE) - Number(a === TRACEPARENT_MESSAGE_ATTRIBUTE))
    .slice(0, MAX_MESSAGE_ATTRIBUTES - OWN_ATTRIBUTES.length);
  const fifo = record.eventSourceARN.endsWith('.fifo');
  return {
    MessageBody: record.body,
    MessageAttributes: { ...Object.fromEntries(producers), ...own },
    ...(fifo ? { MessageGroupId: record.attributes.MessageGroupId ?? envelope?.resourceId ?? 'ballast', MessageDeduplicationId: record.messageId } : {}),
  };
}

/** SQS delays a message 15 minutes at most. */
const MAX_DELAY_SECONDS = 900;
/** Since when a requeued record has waited for a lock (ms since the epoch): its first copy's send time. */
export const LOCK_WAIT_SINCE_ATTRIBUTE = 'ballast.lockWaitSince';

/**
 * The copy of a record that still waits for a resource on its last receive (a held lock, its lane,
 * its own claim's lease: `waitedForResource`), sent to its own queue as a new message: its receive
 * count starts over, so waiting behind a busy resource never spends the attempts that would
 * dead-letter it. Same body and attributes (the trace context among them), delayed by its
 * {@link retryDelaySeconds} at the receive count it reached (the copy's own receives then back off
 * from the first again), and `ballast.lockWaitSince` carrying when the wait began.
 * Undefined when the record should go to the DLQ after all: it has waited for a lock longer than
 * `maxLockWaitMs` (a lock no one ever gets is an incident, not a queue; a job's own held claim
 * ends with its lease, so that wait has no such bound), or it cannot be requeued ({@link canRequeue}).
 */
export function requeuedMessage(
  record: SQSRecord, error: BallastError, facts: { nowMs: number; maxLockWaitMs: number; backoff?: BackoffOptions; random?: () => number },
): { MessageBody: string; MessageAttributes: Record<string, MessageAttributeValue>; DelaySeconds: number } | undefined {
  if (!canRequeue(record)) return undefined;
  // The first copy's start, else this message's send time; neither trusted past now (a skewed clock must not extend the wait).
  const carriedSince = Number(record.messageAttributes?.[LOCK_WAIT_SINCE_ATTRIBUTE]?.stringValue);
  const since = Number.isFinite(carriedSince) && carriedSince > 0 ? carriedSince : Number(record.attributes.SentTimestamp);
  const waitingSince = Number.isFinite(since) && since > 0 ? Math.min(since, facts.nowMs) : facts.nowMs;
  if (facts.nowMs - waitingSince > facts.maxLockWaitMs && !(error instanceof ClaimHeldError)) return undefined;
  const carried = sendable(record).filter(([name]) => name !== LOCK_WAIT_SINCE_ATTRIBUTE);
  return {
    MessageBody: record.body,
    MessageAttributes: { ...Object.fromEntries(carried), [LOCK_WAIT_SINCE_ATTRIBUTE]: { DataType: 'Number', StringValue: String(waitingSince) } },
    DelaySeconds: Math.min(MAX_DELAY_SECONDS, retryDelaySeconds(record, error, facts.backoff, facts.random)),
  };
}

/** A received message's attributes as `SendMessage` takes them. */
function sendable(record: SQSRecord): [string, MessageAttributeValue][] {
  return Object.entries(record.messageAttributes ?? {}).map(([name, value]): [string, MessageAttributeValue] => [name, {
    DataType: value.dataType,
    ...(value.stringValue !== undefined ? { StringValue: value.stringValue } : {}),
    ...(value.binaryValue !== undefined ? { BinaryValue: Buffer.from(value.binaryValue, 'base64') } : {}),
  }]);
}
