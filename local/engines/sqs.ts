import { buildApp } from 'fauxqs';
import { LOCAL_REGION, type Engine } from './engine.ts';

/** The fauxqs message store; exposed so tests and the local cloud can inspect queues directly. */
export interface SqsStore {
  host: string;
  region?: string;
  inspectQueue(name: string): { attributes: Record<string, string>; messages: { ready: unknown[]; delayed: unknown[]; inflight: unknown[] } } | undefined;
}

export interface SqsEngine extends Engine {
  readonly store: SqsStore;
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
  const sqsStore = new SqsStore();
  sqsStore.host = '';
  sqsStore.region = LOCAL_REGION;
  const app = buildApp({
    logger: false,
    defaultRegion: LOCAL_REGION,
    stores: { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() } as never,
  });
  const address = await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const port = Number(new URL(address).port);
  return {
    name: 'sqs',
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: process.pid,
    store: sqsStore,
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
