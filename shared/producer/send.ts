import { SendMessageBatchCommand, type MessageAttributeValue, type SendMessageBatchRequestEntry, type SQSClient } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import { isRetryableAwsError } from '../errors/index.ts';
import { withDefaults } from '../options/index.ts';
import { ProducerConfigurationError } from './errors.ts';
import { messageDeduplicationId, messageGroupId } from './fifo.ts';
import { assertMessageSize, DEFAULT_MAX_MESSAGE_BYTES } from './size.ts';
import { endFailed, endSent, startProduce, tracedEntryFields, type ProduceTrace } from './trace.ts';

/** SQS's cap on entries per SendMessageBatch. */
const MAX_BATCH_ENTRIES = 10;

export interface SendOptions {
  /**
   * Attempts per entry: a batch entry that failed on SQS's side (not the sender's fault) or a whole
   * request that failed with a retryable error is retried, and only those entries.
   * @default 5
   */
  readonly maxAttempts?: number;
  /** First retry delay; doubles per attempt, with jitter (half fixed, half random). @default 100 */
  readonly retryBaseDelayMs?: number;
  /** Batches in flight at once. @default 4 */
  readonly concurrency?: number;
  /** @default DEFAULT_MAX_MESSAGE_BYTES (256 KiB) */
  readonly maxMessageBytes?: number;
  /** FIFO queue: sets group (resource id) and deduplication (idempotency key) ids. @default - the URL ends in `.fifo` */
  readonly fifo?: boolean;
  /** Added to every message (at most 10 per message, counted in its size). @default {} */
  readonly messageAttributes?: Record<string, MessageAttributeValue>;
  /** Called after every batch settles. @default - none */
  readonly onProgress?: (progress: SendProgress) => void;
  /** @default - a timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default Math.random */
  readonly random?: () => number;
}

export interface SendProgress {
  readonly total: number;
  readonly sent: number;
  readonly failed: number;
}

export interface SentJob {
  readonly envelope: Envelope;
  readonly messageId: string;
  readonly attempts: number;
}

export interface FailedJob {
  readonly envelope: Envelope;
  /** SQS's error code, or the request error's name. */
  readonly code: string;
  readonly message: string;
  /** True when SQS blamed the request itself: retrying the same entry cannot help. */
  readonly senderFault: boolean;
  readonly attempts: number;
}

export interface SendResult {
  readonly sent: readonly SentJob[];
  readonly failed: readonly FailedJob[];
}

const defaults = { maxAttempts: 5, retryBaseDelayMs: 100, concurrency: 4, maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES };

/**
 * Sends envelopes with SendMessageBatch: batches of up to 10 within the size limit, several in
 * flight, and retries of only the entries that failed. Every message is size-checked before
 * anything is sent.
 *
 * @throws MessageTooLargeError before sending anything, naming the job
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { jobBuilder, sendEnvelopes } from '@ballast-stack/ballast/producer';
 * const job = jobBuilder(JOB_CATALOG);
 * const result = await sendEnvelopes(new SQSClient({}), queueUrl, [job('widget.make', { resourceId: 'w-1', idempotencyKey: 'batch-77', payload: { count: 500 } })]);
 * if (result.failed.length > 0) console.error(result.failed);
 */
export async function sendEnvelopes(sqs: SQSClient, queueUrl: string, envelopes: readonly Envelope[], options: SendOptions = {}): Promise<SendResult> {
  const o = withDefaults(defaults, options);
  for (const field of ['maxAttempts', 'concurrency', 'maxMessageBytes'] as const) {
    if (!Number.isInteger(o[field]) || o[field] < 1) throw new ProducerConfigurationError(`sendEnvelopes: ${field} must be an integer >= 1, got ${o[field]}`);
  }
  const fifo = o.fifo ?? queueUrl.endsWith('.fifo');
  const attributes = o.messageAttributes ?? {};
  const queueName = queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
  const entryOf = (envelope: Envelope): Entry => {
    const body = JSON.stringify(envelope);
    const { span, ...traced } = startProduce(envelope, queueName, attributes);
    try {
      const sizeBytes = assertMessageSize(body, o.maxMessageBytes, `job ${envelope.jobId} (${envelope.type}, ${envelope.resourceId})`, traced.attributes);
      return { envelope, body, sizeBytes, span, ...traced };
    } catch (error) {
      endFailed(span, (error as Error).message);
      throw error;
    }
  };
  const entries: Entry[] = [];
  try {
    for (const envelope of envelopes) entries.push(entryOf(envelope));
  } catch (error) {
    for (const entry of entries) endFailed(entry.span, 'not sent: another message of the call is too large');
    throw error;
  }
  const batches = sizedBatches(entries, o.maxMessageBytes);
  const sent: SentJob[] = [];
  const failed: FailedJob[] = [];
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = o.random ?? Math.random;
  const report = () => o.onProgress?.({ total: envelopes.length, sent: sent.length, failed: failed.length });

  const sendBatch = async (batch: readonly Entry[]) => {
    let pending = batch.map((entry, index) => ({ ...entry, id: String(index) }));
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const retry: typeof pending = [];
      const toRequest = (entry: (typeof pending)[number]): SendMessageBatchRequestEntry => ({
        Id: entry.id,
        MessageBody: entry.body,
        ...tracedEntryFields(entry),
        ...(fifo ? { MessageGroupId: messageGroupId(entry.envelope), MessageDeduplicationId: messageDeduplicationId(entry.envelope) } : {}),
      });
      try {
        const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(toRequest) }));
        const byId = new Map(pending.map((entry) => [entry.id, entry]));
        for (const ok of out.Successful ?? []) {
          const entry = byId.get(ok.Id ?? '');
          if (entry) {
            sent.push({ envelope: entry.envelope, messageId: ok.MessageId ?? '', attempts: attempt });
            endSent(entry.span, ok.MessageId);
          }
          byId.delete(ok.Id ?? '');
        }
        for (const bad of out.Failed ?? []) {
          const entry = byId.get(bad.Id ?? '');
          if (!entry) continue;
          byId.delete(bad.Id ?? '');
          if (bad.SenderFault || attempt >= o.maxAttempts) {
            failed.push({ envelope: entry.envelope, code: bad.Code ?? 'Unknown', message: bad.Message ?? '', senderFault: bad.SenderFault === true, attempts: attempt });
            endFailed(entry.span, `${bad.Code ?? 'Unknown'}: ${bad.Message ?? ''}`);
          } else {
            retry.push(entry);
          }
        }
        // Entries SQS answered neither way: treat as failed on its side, so retry them.
        retry.push(...byId.values());
      } catch (error) {
        const name = error instanceof Error ? error.name : 'Error';
        const message = error instanceof Error ? error.message : String(error);
        if (!isRetryableAwsError(error) || attempt >= o.maxAttempts) {
          for (const entry of pending) {
            failed.push({ envelope: entry.envelope, code: name, message, senderFault: !isRetryableAwsError(error), attempts: attempt });
            endFailed(entry.span, `${name}: ${message}`);
          }
        } else {
          retry.push(...pending);
        }
      }
      pending = retry;
      if (pending.length > 0) {
        const exponential = o.retryBaseDelayMs * 2 ** (attempt - 1);
        await sleep(exponential / 2 + random() * (exponential / 2));
      }
    }
    report();
  };

  let next = 0;
  const lanes = Array.from({ length: Math.min(o.concurrency, batches.length) }, async () => {
    while (next < batches.length) {
      const batch = batches[next];
      next += 1;
      if (batch) await sendBatch(batch);
    }
  });
  await Promise.all(lanes);
  return { sent, failed };
}

interface Entry extends ProduceTrace {
  readonly envelope: Envelope;
  readonly body: string;
  readonly sizeBytes: number;
}

/** Batches of at most 10 entries whose total size stays within the limit (SQS's batch rule). */
export function sizedBatches<T extends { readonly sizeBytes: number }>(entries: readonly T[], maxBatchBytes: number = DEFAULT_MAX_MESSAGE_BYTES): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const entry of entries) {
    if (current.length === MAX_BATCH_ENTRIES || (current.length > 0 && bytes + entry.sizeBytes > maxBatchBytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.sizeBytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

