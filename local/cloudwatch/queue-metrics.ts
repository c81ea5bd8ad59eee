import type { SQSClient } from '@aws-sdk/client-sqs';
import { queueCounts } from '../../shared/queues/index.ts';
import { oldestMessageSentAtMs, type EngineEndpoints, type QueueActivity } from '../engines/index.ts';
import type { MetricSeries } from './series.ts';

export interface QueueMetricsOptions {
  readonly sqs: SQSClient;
  readonly queues: readonly { readonly name: string; readonly url: string }[];
  readonly series: MetricSeries;
  /**
   * The SQS engine; when it runs in this process (it has `store` and `onActivity`), the metrics
   * a client cannot read are measured too.
   * @default - the gauges a client reads only
   */
  readonly engine?: EngineEndpoints['sqs'];
  /** How often each queue is sampled, as SQS publishes its gauges once a minute. @default 10_000 */
  readonly intervalMs?: number;
  /** What stamps the samples. @default Date.now */
  readonly clock?: () => number;
}

/** The count metrics of one queue, summed between two samples. */
type QueueCounts = Record<'NumberOfMessagesSent' | 'NumberOfMessagesReceived' | 'NumberOfMessagesDeleted', number>;

/**
 * SQS's metrics in `AWS/SQS` (dimension `QueueName`) for the local queues. Sampled through the
 * API, as any client reads them: `ApproximateNumberOfMessagesVisible`, `...NotVisible` and
 * `...Delayed`. From an in-process engine (see {@link QueueMetricsOptions.engine}):
 * `ApproximateAgeOfOldestMessage` (seconds, sampled from the stored messages' sent times),
 * `SentMessageSize` (bytes, one datapoint per message sent), and `NumberOfMessagesSent`,
 * `NumberOfMessagesReceived` and `NumberOfMessagesDeleted`, counted from every successful call
 * (whoever made it) and recorded at each sample as the count since the previous one, 0 included,
 * as SQS publishes a count per period for an active queue. Engines in another process have no
 * such view: these metrics then have no local datapoints.
 */
export function sampleQueueMetrics(options: QueueMetricsOptions): { stop(): void; sample(): Promise<void> } {
  const clock = options.clock ?? Date.now;
  const record = (queueName: string, name: string, value: number, nowMs: number) =>
    options.series.record({ namespace: 'AWS/SQS', name, dimensions: { QueueName: queueName } }, value, nowMs);
  const { store, onActivity } = options.engine ?? {};
  const counted = new Map<string, QueueCounts>(options.queues.map((queue) => [queue.name, emptyCounts()]));
  const countActivity = (activity: QueueActivity) => {
    const counts = counted.get(activity.queueName);
    if (!counts) return; // not one of the stack's queues
    if (activity.kind === 'sent') {
      counts.NumberOfMessagesSent += activity.sizesBytes.length;
      for (const sizeBytes of activity.sizesBytes) record(activity.queueName, 'SentMessageSize', sizeBytes, clock());
    } else {
      counts[activity.kind === 'received' ? 'NumberOfMessagesReceived' : 'NumberOfMessagesDeleted'] += activity.count;
    }
  };
  const unsubscribe = onActivity?.(countActivity);

  const sample = async () => {
    const nowMs = clock();
    await Promise.all(options.queues.map(async (queue) => {
      if (unsubscribe) {
        for (const [name, count] of Object.entries(counted.get(queue.name) ?? {})) record(queue.name, name, count, nowMs);
        counted.set(queue.name, emptyCounts());
      }
      if (store) {
        // An age is a duration of real time, like a visibility timeout: not scaled with the metric clock.
        const oldestMs = oldestMessageSentAtMs({ store }, queue.name);
        if (oldestMs !== undefined) record(queue.name, 'ApproximateAgeOfOldestMessage', oldestMs === null ? 0 : Math.max(0, Math.floor((Date.now() - oldestMs) / 1000)), nowMs);
      }
      const counts = await queueCounts(options.sqs, queue.url).catch(() => undefined);
      if (!counts) return;
      record(queue.name, 'ApproximateNumberOfMessagesVisible', counts.visible, nowMs);
      record(queue.name, 'ApproximateNumberOfMessagesNotVisible', counts.inFlight, nowMs);
      record(queue.name, 'ApproximateNumberOfMessagesDelayed', counts.delayed, nowMs);
    }));
  };
  let running: Promise<void> | undefined;
  // A failed sample is a gap in the gauges, never an unhandled rejection that ends the process.
  const sampleOnce = () => sample().catch((error: unknown) => void process.stderr.write(`queue metrics: a sample failed: ${String(error)}\n`));
  const timer = setInterval(() => void (running ??= sampleOnce().finally(() => void (running = undefined))), options.intervalMs ?? 10_000);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      unsubscribe?.();
    },
    sample,
  };
}

function emptyCounts(): QueueCounts {
  return { NumberOfMessagesSent: 0, NumberOfMessagesReceived: 0, NumberOfMessagesDeleted: 0 };
}
