import {
  DeleteMessageCommand, GetQueueUrlCommand, SendMessageCommand, StartMessageMoveTaskCommand, type MessageAttributeValue, type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { messageDeduplicationId, messageGroupId } from '../producer/index.ts';
import { queueArn, queueName, readMessages, releaseMessages } from './queues.ts';
import { collapseCopies, countByReason, matches, toDeadLetter, type DeadLetter, type DeadLetterFilter, type ReasonCount } from './dlq-messages.ts';
import { checkReplay, REPLAY_DECISIONS, type ReplayDecision } from './replay-check.ts';
import type { JobCatalog } from '../workloads/job-types.ts';

export interface DlqLocation {
  readonly sqs: SQSClient;
  readonly deadLetterQueueUrl: string;
  /** Where replays go when a message does not name its source queue (the stack's `JobsQueueUrl`). */
  readonly defaultSourceQueueUrl: string;
}

export interface DlqListing {
  /** Source messages read (copies of one count once). */
  readonly total: number;
  /** Source messages selected by the filter. */
  readonly selected: number;
  /** DLQ messages read: `total` plus the extra copies. */
  readonly copies: number;
  readonly reasons: readonly ReasonCount[];
  /** One per selected source message: its earliest copy, with `copies`. */
  readonly messages: readonly DeadLetter[];
}

/**
 * Reads up to `max` DLQ messages (making them visible again right after), collapses the copies of
 * each source message into one entry and groups the entries by reason.
 */
export async function listDeadLetters(location: DlqLocation, filter: DeadLetterFilter = {}, max = 1000, nowMs = Date.now()): Promise<DlqListing> {
  const messages = await readMessages(location.sqs, location.deadLetterQueueUrl, { max, visibilityTimeoutSeconds: 30 });
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, messages);
  const sources = collapseCopies(messages.map(toDeadLetter));
  const selected = sources.filter((source) => matches(source, filter, nowMs)).map((source) => source.letter);
  return { total: sources.length, selected: selected.length, copies: messages.length, reasons: countByReason(selected), messages: selected };
}

export interface ReplayOptions {
  readonly filter: DeadLetterFilter;
  readonly documents: DynamoDBDocumentClient;
  readonly controlTableName: string;
  /** The job types a replayed payload must still validate against (`workloadCatalog(WORKLOADS)`). */
  readonly catalog: JobCatalog;
  /** Decide and report only: nothing is sent or deleted. @default false */
  readonly dryRun?: boolean;
  /** Also delete dead letters whose key already completed with the same payload. @default false */
  readonly deleteDuplicates?: boolean;
  /** @default 1000 */
  readonly max?: number;
  readonly onProgress?: (done: number, total: number) => void;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

export interface ReplayOutcome {
  /** The earliest copy's messageId, as `dlq list` shows it. */
  readonly messageId: string;
  readonly sourceMessageId: string;
  /** DLQ copies of the source message: it is replayed once, and every copy is deleted once it was sent. */
  readonly copies: number;
  readonly reason: string;
  readonly type: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly decision: ReplayDecision;
  readonly detail: string;
  /** True once sent back (and deleted from the DLQ); false in a dry run or on failure. */
  readonly done: boolean;
  readonly error?: string;
}

export interface ReplayReport {
  readonly dryRun: boolean;
  /** Source messages read (copies of one count once). */
  readonly examined: number;
  /** Source messages selected by the filter. */
  readonly selected: number;
  /** DLQ messages read: `examined` plus the extra copies. */
  readonly copies: number;
  readonly replayed: number;
  readonly skipped: Record<string, number>;
  readonly failed: number;
  readonly outcomes: readonly ReplayOutcome[];
}

/**
 * Replays selected dead letters to the queue they came from, each after {@link checkReplay}; the
 * rest are made visible again. Copies of one source message are replayed once (the earliest), and
 * all of them are deleted from the DLQ, only after it was sent.
 */
export async function replayDeadLetters(location: DlqLocation, options: ReplayOptions): Promise<ReplayReport> {
  const now = options.nowMs ?? Date.now;
  const messages = await readMessages(location.sqs, location.deadLetterQueueUrl, { max: options.max ?? 1000, visibilityTimeoutSeconds: 300 });
  const sources = collapseCopies(messages.map(toDeadLetter));
  const selected = sources.filter((source) => matches(source, options.filter, now()));
  const chosen = new Set(selected.flatMap((source) => source.all.map((copy) => copy.messageId)));
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, messages.filter((m) => !chosen.has(m.MessageId ?? '')));
  const outcomes: ReplayOutcome[] = [];
  const queueUrls = new Map<string, string>();
  const deleted = new Set<string>();
  const deleteCopies = async (copies: readonly DeadLetter[]) => {
    for (const copy of copies) {
      await deleteLetter(location, copy);
      deleted.add(copy.messageId);
    }
  };
  for (const { letter, all } of selected) {
    const check = await checkReplay(letter, options.documents, options.controlTableName, now(), options.catalog);
    const base = {
      messageId: letter.messageId, sourceMessageId: letter.sourceMessageId, copies: all.length,
      reason: letter.reason, type: letter.type, idempotencyKey: letter.idempotencyKey, ...check,
    };
    try {
      if (options.dryRun) {
        outcomes.push({ ...base, done: false });
      } else if (check.decision === REPLAY_DECISIONS.replay) {
        const target = await sourceQueueUrl(location, letter, queueUrls);
        await location.sqs.send(new SendMessageCommand({ QueueUrl: target, MessageBody: letter.body, ...replayAttributes(letter, target) }));
        await deleteCopies(all);
        outcomes.push({ ...base, done: true });
      } else if (check.decision === REPLAY_DECISIONS.duplicate && options.deleteDuplicates) {
        await deleteCopies(all);
        outcomes.push({ ...base, done: true });
      } else {
        outcomes.push({ ...base, done: false });
      }
    } catch (error) {
      outcomes.push({ ...base, done: false, error: `${(error as Error).name}: ${(error as Error).message}` });
    }
    options.onProgress?.(outcomes.length, selected.length);
  }
  // Whatever was chosen but not deleted (dry run, skipped, failed, or a copy whose delete failed) is made visible again.
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, messages.filter((m) => chosen.has(m.MessageId ?? '') && !deleted.has(m.MessageId ?? '')));
  const skipped: Record<string, number> = {};
  for (const outcome of outcomes) if (outcome.decision !== REPLAY_DECISIONS.replay) skipped[outcome.decision] = (skipped[outcome.decision] ?? 0) + 1;
  return {
    dryRun: options.dryRun === true,
    examined: sources.length,
    selected: selected.length,
    copies: messages.length,
    replayed: outcomes.filter((o) => o.decision === REPLAY_DECISIONS.replay && o.done).length,
    skipped,
    failed: outcomes.filter((o) => o.error !== undefined).length,
    outcomes,
  };
}

/** What {@link redriveAll} did. */
export type RedriveResult =
  | { readonly mode: 'message-move-task'; readonly taskHandle: string }
  | { readonly mode: 'unsupported'; readonly why: string };

/**
 * Whole-queue redrive with SQS's own message move task, to the jobs queue. The destination is
 * named because most dead letters were sent by the worker itself (with their reason), not moved
 * by SQS redrive, so they have no "original source queue" for the task to return them to.
 * Endpoints without StartMessageMoveTask (fauxqs) answer `unsupported`; callers then fall back to
 * the filtered replay.
 */
export async function redriveAll(location: DlqLocation): Promise<RedriveResult> {
  const [sourceArn, destinationArn] = await Promise.all([
    queueArn(location.sqs, location.deadLetterQueueUrl),
    queueArn(location.sqs, location.defaultSourceQueueUrl),
  ]);
  try {
    const out = await location.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn }));
    return { mode: 'message-move-task', taskHandle: out.TaskHandle ?? '' };
  } catch (error) {
    const e = error as Error & { $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode ?? 0;
    if (/UnsupportedOperation|InvalidAction|UnknownOperation|NotImplemented/i.test(`${e.name} ${e.message}`) || status === 404 || status === 501) {
      return { mode: 'unsupported', why: `${e.name}: ${e.message}` };
    }
    throw error;
  }
}

async function deleteLetter(location: DlqLocation, letter: DeadLetter): Promise<void> {
  await location.sqs.send(new DeleteMessageCommand({ QueueUrl: location.deadLetterQueueUrl, ReceiptHandle: letter.receiptHandle }));
}

async function sourceQueueUrl(location: DlqLocation, letter: DeadLetter, cache: Map<string, string>): Promise<string> {
  const arn = letter.source;
  if (!arn || !arn.startsWith('arn:')) return location.defaultSourceQueueUrl;
  const known = cache.get(arn);
  if (known) return known;
  const [, , , , account, name] = arn.split(':');
  if (!name || name === queueName(location.defaultSourceQueueUrl)) return location.defaultSourceQueueUrl;
  const out = await location.sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account || undefined }));
  const url = out.QueueUrl ?? location.defaultSourceQueueUrl;
  cache.set(arn, url);
  return url;
}

/** A replay carries the original body and a `ballast.replayOf` marker; the worker's verdict is not copied. */
function replayAttributes(letter: DeadLetter, target: string): { MessageAttributes?: Record<string, MessageAttributeValue>; MessageGroupId?: string; MessageDeduplicationId?: string } {
  const attributes: Record<string, MessageAttributeValue> = { 'ballast.replayOf': { DataType: 'String', StringValue: letter.messageId } };
  const fifo = target.endsWith('.fifo') && letter.envelope;
  return {
    MessageAttributes: attributes,
    ...(fifo && letter.envelope ? { MessageGroupId: messageGroupId(letter.envelope), MessageDeduplicationId: `replay-${messageDeduplicationId(letter.envelope)}`.slice(0, 128) } : {}),
  };
}
