import { LOCAL_REGION, type Engine } from './engine.ts';

/** A message as the fauxqs store keeps it (the fields the local cloud reads). */
export interface StoredMessage {
  /** Epoch ms. */
  readonly sentTimestamp: number;
  readonly approximateReceiveCount: number;
}

/** The fauxqs message store; exposed so tests and the local cloud can inspect queues directly. */
export interface SqsStore {
  host: string;
  region?: string;
  inspectQueue(name: string): {
    attributes: Record<string, string>;
    messages: { ready: StoredMessage[]; delayed: StoredMessage[]; inflight: { message: StoredMessage }[] };
  } | undefined;
}

/**
 * What one successful call did to a queue, as SQS's own CloudWatch metrics count it: each message
 * sent (with its size), and how many messages a receive returned or a delete removed.
 */
export type QueueActivity =
  | { readonly queueName: string; readonly kind: 'sent'; readonly sizesBytes: readonly number[] }
  | { readonly queueName: string; readonly kind: 'received' | 'deleted'; readonly count: number };

export interface SqsEngine extends Engine {
  readonly store: SqsStore;
  /** Calls `listener` after every successful send, receive and delete, whoever made it; returns the unsubscribe. */
  onActivity(listener: (activity: QueueActivity) => void): () => void;
}

/** Imports one of fauxqs's own modules next to its entry point (they are not in its exports map). */
async function importFauxqsModule<T>(file: string): Promise<T> {
  return (await import(new URL(file, import.meta.resolve('fauxqs')).href)) as T;
}

/**
 * Starts fauxqs (an SQS emulator with visibility timeouts, redrive, FIFO groups and long polling)
 * inside this process on a free port. Being in-process, it can never be orphaned.
 *
 * fauxqs's `startFauxqs` always names queues `http://sqs.<region>.localhost:<port>/...`, and the
 * SQS client sends each request to its QueueUrl's host, which glibc does not resolve. With the
 * store's host cleared, fauxqs echoes the host the client used (127.0.0.1:<port>), so queue URLs
 * are the endpoint itself and handlers need nothing beyond `AWS_ENDPOINT_URL_SQS`.
 */
export async function startSqs(options: { port?: number } = {}): Promise<SqsEngine> {
  const [{ SqsStore }, { SnsStore }, { S3Store }] = await Promise.all([
    importFauxqsModule<{ SqsStore: new () => SqsStore }>('sqs/sqsStore.js'),
    importFauxqsModule<{ SnsStore: new () => object }>('sns/snsStore.js'),
    importFauxqsModule<{ S3Store: new () => object }>('s3/s3Store.js'),
  ]);
  // Loaded on start: fauxqs is an optional peer, needed only where an engine runs.
  const { buildApp } = await import('fauxqs');
  const sqsStore = new SqsStore();
  sqsStore.host = '';
  sqsStore.region = LOCAL_REGION;
  const app = buildApp({
    logger: false,
    defaultRegion: LOCAL_REGION,
    stores: { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() } as never,
  });
  const listeners = new Set<(activity: QueueActivity) => void>();
  // Read off the calls' answers, as SQS counts its metrics: whoever sends, receives or deletes is
  // counted, and a message fauxqs moves to a dead-letter queue itself is no send.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (listeners.size > 0 && reply.statusCode === 200 && typeof payload === 'string') {
      try {
        const activity = queueActivity(String(request.headers['x-amz-target'] ?? ''), request.body, payload);
        if (activity) for (const listener of listeners) listener(activity);
      } catch {
        // Metrics must never fail the call they observe.
      }
    }
    done();
  });
  const address = await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const port = Number(new URL(address).port);
  return {
    name: 'sqs',
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: process.pid,
    store: sqsStore,
    onActivity: (listener) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    stop: async () => void (await app.close()),
  };
}

/**
 * Messages still on queue `name` (ready, delayed or in flight), read from the emulator's store:
 * exact and free, unlike `ApproximateNumberOfMessages*`, so a benchmark can stop its clock the
 * moment the last message is deleted.
 */
export function queueDepth(engine: SqsEngine, name: string): number {
  const queue = engine.store.inspectQueue(name);
  if (!queue) return 0;
  return queue.messages.ready.length + queue.messages.delayed.length + queue.messages.inflight.length;
}

/**
 * When the oldest message on queue `name` was sent (epoch ms), as SQS's `ApproximateAgeOfOldestMessage`
 * measures it: over the messages waiting or in flight, not the delayed ones; a message received
 * three times or more counts only when no other is left, because SQS then moves it to the back of
 * the queue for this metric. `null` for an empty queue, undefined for a queue the engine lacks.
 */
export function oldestMessageSentAtMs(engine: Pick<SqsEngine, 'store'>, name: string): number | null | undefined {
  const queue = engine.store.inspectQueue(name);
  if (!queue) return undefined;
  let oldestMs: number | null = null;
  let oldestFreshMs: number | null = null;
  for (const message of [...queue.messages.ready, ...queue.messages.inflight.map((entry) => entry.message)]) {
    oldestMs = Math.min(oldestMs ?? Infinity, message.sentTimestamp);
    if (message.approximateReceiveCount < 3) oldestFreshMs = Math.min(oldestFreshMs ?? Infinity, message.sentTimestamp);
  }
  return oldestFreshMs ?? oldestMs;
}

/** A message attribute in SQS's JSON protocol. */
interface MessageAttribute { readonly DataType?: string; readonly StringValue?: string; readonly BinaryValue?: string }
interface SentEntry { readonly Id?: string; readonly MessageBody?: string; readonly MessageAttributes?: Record<string, MessageAttribute> }

/** What a successful call (JSON protocol: its `X-Amz-Target`, request body and response) did to its queue, if it sent, received or deleted. */
function queueActivity(target: string, body: unknown, response: string): QueueActivity | undefined {
  const request = (body ?? {}) as { QueueUrl?: string; Entries?: SentEntry[] } & SentEntry;
  const queueName = request.QueueUrl?.split('/').at(-1);
  if (!queueName) return undefined;
  const parsed = () => JSON.parse(response) as { Messages?: unknown[]; Successful?: { Id?: string }[] };
  switch (target) {
    case 'AmazonSQS.SendMessage': return { queueName, kind: 'sent', sizesBytes: [messageSizeBytes(request)] };
    case 'AmazonSQS.SendMessageBatch': {
      const sent = new Set((parsed().Successful ?? []).map((entry) => entry.Id));
      return { queueName, kind: 'sent', sizesBytes: (request.Entries ?? []).filter((entry) => sent.has(entry.Id)).map(messageSizeBytes) };
    }
    case 'AmazonSQS.ReceiveMessage': return { queueName, kind: 'received', count: parsed().Messages?.length ?? 0 };
    case 'AmazonSQS.DeleteMessage': return { queueName, kind: 'deleted', count: 1 };
    case 'AmazonSQS.DeleteMessageBatch': return { queueName, kind: 'deleted', count: parsed().Successful?.length ?? 0 };
    default: return undefined;
  }
}

/** A message's size as SQS counts it against its limit: the body plus each attribute's name, type and value. */
function messageSizeBytes(entry: SentEntry): number {
  const attributes = Object.entries(entry.MessageAttributes ?? {}).reduce((bytes, [name, attribute]) => bytes
    + Buffer.byteLength(name) + Buffer.byteLength(attribute.DataType ?? '')
    + (attribute.BinaryValue === undefined ? Buffer.byteLength(attribute.StringValue ?? '') : Buffer.from(attribute.BinaryValue, 'base64').length), 0);
  return Buffer.byteLength(entry.MessageBody ?? '') + attributes;
}
