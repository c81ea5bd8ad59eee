import {
  ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, type Message, type SQSClient,
} from '@aws-sdk/client-sqs';

export { queueCounts, type QueueCounts } from '../queues/index.ts';

export async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return Attributes.QueueArn ?? '';
}

/** The queue's name, the last segment of its URL (CloudWatch's `QueueName` dimension). */
export function queueName(queueUrl: string): string {
  return queueUrl.split('/').pop() ?? queueUrl;
}

export interface ReadMessagesOptions {
  /** Stop after this many distinct messages. @default 1000 */
  readonly max?: number;
  /** How long read messages stay hidden while we look at them. @default 30 */
  readonly visibilityTimeoutSeconds?: number;
}

/**
 * Reads up to `max` distinct messages with all attributes, keeping them hidden for the
 * visibility timeout. Call {@link releaseMessages} for the ones not consumed. Every read counts
 * as a receive: use it on DLQs, not on a live source queue with a redrive policy.
 */
export async function readMessages(sqs: SQSClient, queueUrl: string, options: ReadMessagesOptions = {}): Promise<Message[]> {
  const max = options.max ?? 1000;
  const seen = new Map<string, Message>();
  let emptyReads = 0;
  while (seen.size < max && emptyReads < 2) {
    const out = await sqs.send(new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: Math.min(10, max - seen.size),
      VisibilityTimeout: options.visibilityTimeoutSeconds ?? 30,
      WaitTimeSeconds: 0,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }));
    const fresh = (out.Messages ?? []).filter((m) => m.MessageId && !seen.has(m.MessageId));
    for (const message of fresh) seen.set(message.MessageId as string, message);
    emptyReads = fresh.length === 0 ? emptyReads + 1 : 0;
  }
  return [...seen.values()];
}

/** Makes read messages visible again at once. */
export async function releaseMessages(sqs: SQSClient, queueUrl: string, messages: readonly Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const batch = messages.slice(i, i + 10).filter((m) => m.ReceiptHandle);
    if (batch.length === 0) continue;
    await sqs.send(new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queueUrl,
      Entries: batch.map((m, index) => ({ Id: String(index), ReceiptHandle: m.ReceiptHandle as string, VisibilityTimeout: 0 })),
    }));
  }
}

/**
 * Age of the oldest message by peeking (`SentTimestamp` of a sample): the fallback where CloudWatch's
 * `ApproximateAgeOfOldestMessage` has no data. Peeked messages are released at once.
 */
export async function peekOldestAgeSeconds(sqs: SQSClient, queueUrl: string, nowMs: number, sample = 30): Promise<number | undefined> {
  const messages = await readMessages(sqs, queueUrl, { max: sample, visibilityTimeoutSeconds: 5 });
  await releaseMessages(sqs, queueUrl, messages);
  const sent = messages.map((m) => Number(m.Attributes?.SentTimestamp)).filter((n) => Number.isFinite(n) && n > 0);
  return sent.length === 0 ? undefined : Math.max(0, Math.round((nowMs - Math.min(...sent)) / 1000));
}
