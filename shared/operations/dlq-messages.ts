import type { Message } from '@aws-sdk/client-sqs';
import { parseEnvelope, type Envelope } from '../envelope/index.ts';

/** A DLQ message as operators see it: why it failed (the worker's `ballast.*` attributes) and what it is. */
export interface DeadLetter {
  readonly messageId: string;
  /**
   * The SQS messageId of the message that failed (`ballast.sourceMessageId`); a message SQS redrove
   * itself keeps its MessageId, so it is its own source. Copies of one source message share it.
   */
  readonly sourceMessageId: string;
  /** How many DLQ messages are copies of this source message: 1 until {@link collapseCopies} counts them. */
  readonly copies: number;
  readonly reason: string;
  readonly error: string;
  readonly attempt: number | undefined;
  readonly workerVersion: string | undefined;
  /** ARN of the queue it came from. */
  readonly source: string | undefined;
  readonly failedAt: string | undefined;
  /** When it entered SQS (the DLQ keeps the original send time on redrive). */
  readonly sentAt: string | undefined;
  readonly receiveCount: number;
  readonly type: string | undefined;
  readonly resourceId: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly schemaVersion: string | undefined;
  /** The parsed envelope, when the body is one this code reads. */
  readonly envelope: Envelope | undefined;
  /** Why the body is not a readable envelope. */
  readonly envelopeProblem: string | undefined;
  readonly body: string;
  readonly receiptHandle: string | undefined;
}

/** Reason shown for a message that reached the DLQ without the worker's attributes (SQS redrive). */
export const UNLABELLED_REASON = 'redriven-by-sqs';

export function toDeadLetter(message: Message): DeadLetter {
  const attribute = (name: string) => message.MessageAttributes?.[name]?.StringValue;
  const body = message.Body ?? '';
  let envelope: Envelope | undefined;
  let envelopeProblem: string | undefined;
  try {
    envelope = parseEnvelope(body);
  } catch (error) {
    envelopeProblem = (error as Error).message;
  }
  const loose = envelope ?? looseFields(body);
  const sent = Number(message.Attributes?.SentTimestamp);
  return {
    messageId: message.MessageId ?? '',
    sourceMessageId: attribute('ballast.sourceMessageId') ?? message.MessageId ?? '',
    copies: 1,
    reason: attribute('ballast.reason') ?? UNLABELLED_REASON,
    error: attribute('ballast.error') ?? '',
    attempt: attribute('ballast.attempt') === undefined ? undefined : Number(attribute('ballast.attempt')),
    workerVersion: attribute('ballast.workerVersion'),
    source: attribute('ballast.source'),
    failedAt: attribute('ballast.failedAt'),
    sentAt: Number.isFinite(sent) && sent > 0 ? new Date(sent).toISOString() : undefined,
    receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 0),
    type: loose.type,
    resourceId: loose.resourceId,
    idempotencyKey: loose.idempotencyKey,
    schemaVersion: loose.schemaVersion,
    envelope,
    envelopeProblem,
    body,
    receiptHandle: message.ReceiptHandle,
  };
}

/** The copies of one source message in the DLQ, earliest first; `letter` is the earliest, with `copies` counted. */
export interface SourceMessage {
  readonly letter: DeadLetter;
  readonly all: readonly DeadLetter[];
}

/**
 * Collapses the copies of each source message (the worker dead-lettered a delivery, then crashed
 * before deleting it, and dead-lettered the redelivery too) into one entry: the earliest copy,
 * with `copies` = how many. Sources keep the order of their first copy in `letters`.
 */
export function collapseCopies(letters: readonly DeadLetter[]): SourceMessage[] {
  const order = (letter: DeadLetter) => `${letter.failedAt ?? letter.sentAt ?? ''} ${letter.messageId}`;
  return [...Map.groupBy(letters, (letter) => letter.sourceMessageId).values()].map((group) => {
    const all = group.toSorted((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
    const first = all[0] as DeadLetter;
    return { letter: { ...first, copies: all.length }, all };
  });
}

/** Selects dead letters; every given criterion must match. */
export interface DeadLetterFilter {
  readonly reasons?: readonly string[];
  readonly types?: readonly string[];
  /** Failed at least this long ago. */
  readonly olderThanMs?: number;
  /** Failed at most this long ago. */
  readonly newerThanMs?: number;
  /** The messageId of any copy, or the source messageId. */
  readonly messageIds?: readonly string[];
}

/** Whether a source message is selected: by its earliest copy (what the list shows), or by any copy's messageId. */
export function matches(source: SourceMessage, filter: DeadLetterFilter, nowMs: number): boolean {
  const letter = source.letter;
  if (filter.reasons?.length && !filter.reasons.includes(letter.reason)) return false;
  if (filter.types?.length && !filter.types.includes(letter.type ?? '')) return false;
  const ids = filter.messageIds;
  if (ids?.length && !ids.includes(letter.sourceMessageId) && !source.all.some((copy) => ids.includes(copy.messageId))) return false;
  const ageMs = nowMs - Date.parse(letter.failedAt ?? letter.sentAt ?? new Date(nowMs).toISOString());
  if (filter.olderThanMs !== undefined && !(ageMs >= filter.olderThanMs)) return false;
  if (filter.newerThanMs !== undefined && !(ageMs <= filter.newerThanMs)) return false;
  return true;
}

export function isFiltered(filter: DeadLetterFilter): boolean {
  return Boolean(filter.reasons?.length || filter.types?.length || filter.messageIds?.length ||
    filter.olderThanMs !== undefined || filter.newerThanMs !== undefined);
}

/** Counts by reason (with the types seen under each), for `dlq list` and `doctor`. */
export interface ReasonCount {
  readonly reason: string;
  /** Source messages (copies of one count once). */
  readonly count: number;
  /** DLQ messages: `count` plus the extra copies. */
  readonly copies: number;
  readonly types: Record<string, number>;
  readonly workerVersions: Record<string, number>;
  readonly oldestFailedAt: string | undefined;
  readonly sampleError: string;
}

export function countByReason(letters: readonly DeadLetter[]): ReasonCount[] {
  const groups = new Map<string, DeadLetter[]>();
  for (const letter of letters) groups.set(letter.reason, [...(groups.get(letter.reason) ?? []), letter]);
  return [...groups].map(([reason, group]) => ({
    reason,
    count: group.length,
    copies: group.reduce((sum, l) => sum + l.copies, 0),
    types: tally(group.map((l) => l.type ?? '(unreadable)')),
    workerVersions: tally(group.map((l) => l.workerVersion ?? '(unknown)')),
    oldestFailedAt: group.map((l) => l.failedAt ?? l.sentAt ?? '').filter(Boolean).sort()[0],
    sampleError: group.find((l) => l.error)?.error ?? '',
  })).sort((a, b) => b.count - a.count);
}

function tally(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function looseFields(body: string): Partial<Record<'type' | 'resourceId' | 'idempotencyKey' | 'schemaVersion', string>> {
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const text = (name: string) => (typeof json[name] === 'string' ? (json[name] as string) : undefined);
    return { type: text('type'), resourceId: text('resourceId'), idempotencyKey: text('idempotencyKey'), schemaVersion: text('schemaVersion') };
  } catch {
    return {};
  }
}

/** What `dlq show` prints: everything but the receipt handle. */
export function describeDeadLetter(letter: DeadLetter): Omit<DeadLetter, 'receiptHandle'> {
  const { receiptHandle: _receipt, ...rest } = letter;
  return rest;
}
