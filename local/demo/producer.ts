import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { parseEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { endFailed, endSent, messageSizeBytes, sizedBatches, startProduce, tracedEntryFields, type ProduceTrace } from '../../shared/producer/index.ts';
import type { DemoMessage } from './workload.ts';

export interface PaceOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly messages: readonly Pick<DemoMessage, 'body'>[];
  /** Spread the sends over this long. */
  readonly durationMs: number;
  readonly signal?: AbortSignal;
  readonly onSent?: (count: number) => void;
}

/**
 * Sends `messages` in batches of ten, evenly paced over `durationMs`, retrying entries SQS
 * reports as failed (a bounded number of times). Resolves with how many were sent.
 */
export async function paceMessages(options: PaceOptions): Promise<number> {
  const queueName = options.queueUrl.slice(options.queueUrl.lastIndexOf('/') + 1);
  // Ten to a batch, fewer where large bodies would pass SQS's 256 KiB batch limit.
  const batches = sizedBatches(options.messages.map((message) => ({ body: message.body, sizeBytes: messageSizeBytes(message.body) })));
  const startedAtMs = Date.now();
  let sent = 0;
  for (let b = 0; b < batches.length && !options.signal?.aborted; b += 1) {
    const dueAtMs = startedAtMs + (b / batches.length) * options.durationMs;
    const waitMs = dueAtMs - Date.now();
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    // Each message traced as the producer SDK traces it (malformed ones too: their span has no job).
    const traced = (batches[b] ?? []).map((message) => startProduce(envelopeOf(message.body), queueName));
    let entries = (batches[b] ?? []).map((message, i) => ({ Id: String(i), MessageBody: message.body, ...tracedEntryFields(traced[i] as ProduceTrace) }));
    for (let attempt = 0; attempt < 5 && entries.length > 0; attempt += 1) {
      const out = await options.sqs.send(new SendMessageBatchCommand({ QueueUrl: options.queueUrl, Entries: entries }));
      sent += out.Successful?.length ?? 0;
      for (const ok of out.Successful ?? []) {
        const sentTrace = traced[Number(ok.Id)];
        if (sentTrace) endSent(sentTrace.span, ok.MessageId);
      }
      const failed = new Set((out.Failed ?? []).map((failure) => failure.Id));
      entries = entries.filter((entry) => failed.has(entry.Id));
    }
    for (const entry of entries) endFailed((traced[Number(entry.Id)] as ProduceTrace).span, 'not sent after 5 attempts');
    if (entries.length > 0) throw new Error(`could not send ${entries.length} demo messages after 5 attempts`);
    options.onSent?.(sent);
  }
  return sent;
}

function envelopeOf(body: string): Envelope | undefined {
  try {
    return parseEnvelope(body);
  } catch {
    return undefined;
  }
}
