import {
  DeleteMessageCommand, GetQueueUrlCommand, SendMessageCommand, StartMessageMoveTaskCommand, type MessageAttributeValue, type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { messageDeduplicationId, messageGroupId } from '../producer/index.ts';
import { queueArn, queueName, readMessages, releaseMessages } from './queues.ts';
import { countByReason, matches, toDeadLetter, type DeadLetter, type DeadLetterFilter, type ReasonCount } from './dlq-messages.ts';
import { checkReplay, REPLAY_DECISIONS, type ReplayDecision } from './replay-check.ts';

export interface DlqLocation {
  readonly sqs: SQSClient;
  readonly deadLetterQueueUrl: string;
  /** Where replays go when a message does not name its source queue (the stack's `JobsQueueUrl`). */
  readonly defaultSourceQueueUrl: string;
}

export interface DlqListing {
  readonly total: number;
  readonly selected: number;
  readonly reasons: readonly ReasonCount[];
  readonly messages: readonly DeadLetter[];
}

/** Reads up to `max` DLQ messages (making them visible again right after) and groups them by reason. */
export async function listDeadLetters(location: DlqLocation, filter: DeadLetterFilter = {}, max = 1000, nowMs = Date.now()): Promise<DlqListing> {
  const messages = await readMessages(location.sqs, location.deadLetterQueueUrl, { max, visibilityTimeoutSeconds: 30 });
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, messages);
  const letters = messages.map(toDeadLetter);
  const selected = letters.filter((letter) => matches(letter, filter, nowMs));
  return { total: letters.length, selected: selected.length, reasons: countByReason(selected), messages: selected };
}

export interface ReplayOptions {
  readonly filter: DeadLetterFilter;
  readonly documents: DynamoDBDocumentClient;
  readonly controlTableName: string;
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
  readonly messageId: string;
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
  readonly examined: number;
  readonly selected: number;
  readonly replayed: number;
  readonly skipped: Record<string, number>;
  readonly failed: number;
  readonly outcomes: readonly ReplayOutcome[];
}

/**
 * Replays selected dead letters to the queue they came from, each after {@link checkReplay}; the
 * rest are made visible again. A replayed message is deleted from the DLQ only after it was sent.
 */
export async function replayDeadLetters(location: DlqLocation, options: ReplayOptions): Promise<ReplayReport> {
  const now = options.nowMs ?? Date.now;
  const messages = await readMessages(location.sqs, location.deadLetterQueueUrl, { max: options.max ?? 1000, visibilityTimeoutSeconds: 300 });
  const letters = messages.map(toDeadLetter);
  const selected = letters.filter((letter) => matches(letter, options.filter, now()));
  const untouched = messages.filter((m) => !selected.some((l) => l.messageId === m.MessageId));
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, untouched);
  const outcomes: ReplayOutcome[] = [];
  const queueUrls = new Map<string, string>();
  const keep: DeadLetter[] = [];
  for (const letter of selected) {
    const check = await checkReplay(letter, options.documents, options.controlTableName, now());
    const base = { messageId: letter.messageId, reason: letter.reason, type: letter.type, idempotencyKey: letter.idempotencyKey, ...check };
    try {
      if (options.dryRun) {
        outcomes.push({ ...base, done: false });
        keep.push(letter);
      } else if (check.decision === REPLAY_DECISIONS.replay) {
        const target = await sourceQueueUrl(location, letter, queueUrls);
        await location.sqs.send(new SendMessageCommand({ QueueUrl: target, MessageBody: letter.body, ...replayAttributes(letter, target) }));
        await deleteLetter(location, letter);
        outcomes.push({ ...base, done: true });
      } else if (check.decision === REPLAY_DECISIONS.duplicate && options.deleteDuplicates) {
        await deleteLetter(location, letter);
        outcomes.push({ ...base, done: true });
      } else {
        outcomes.push({ ...base, done: false });
        keep.push(letter);
      }
    } catch (error) {
      outcomes.push({ ...base, done: false, error: `${(error as Error).name}: ${(error as Error).message}` });
      keep.push(letter);
    }
    options.onProgress?.(outcomes.length, selected.length);
  }
  await releaseMessages(location.sqs, location.deadLetterQueueUrl, messages.filter((m) => keep.some((l) => l.messageId === m.MessageId)));
  const skipped: Record<string, number> = {};
  for (const outcome of outcomes) if (outcome.decision !== REPLAY_DECISIONS.replay) skipped[outcome.decision] = (skipped[outcome.decision] ?? 0) + 1;
  return {
    dryRun: options.dryRun === true,
    examined: letters.length,
    selected: selected.length,
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
