import type { SQSClient } from '@aws-sdk/client-sqs';
import { queueCounts } from '../../shared/queues/index.ts';
import type { MetricSeries } from './series.ts';

export interface QueueMetricsOptions {
  readonly sqs: SQSClient;
  readonly queues: readonly { readonly name: string; readonly url: string }[];
  readonly series: MetricSeries;
  /** How often each queue is sampled, as SQS publishes its gauges once a minute. @default 10_000 */
  readonly intervalMs?: number;
  /** What stamps the samples. @default Date.now */
  readonly clock?: () => number;
}

/**
 * SQS's gauges in `AWS/SQS` (dimension `QueueName`), sampled from the local queues:
 * `ApproximateNumberOfMessagesVisible`, `ApproximateNumberOfMessagesNotVisible` and
 * `ApproximateNumberOfMessagesDelayed`. (The age of the oldest message and the send and receive
 * counts are not attributes a client can read; they stay without local datapoints.)
 */
export function sampleQueueMetrics(options: QueueMetricsOptions): { stop(): void; sample(): Promise<void> } {
  const sample = async () => {
    const nowMs = (options.clock ?? Date.now)();
    await Promise.all(options.queues.map(async (queue) => {
      const counts = await queueCounts(options.sqs, queue.url).catch(() => undefined);
      if (!counts) return;
      const record = (name: string, value: number) => options.series.record({ namespace: 'AWS/SQS', name, dimensions: { QueueName: queue.name } }, value, nowMs);
      record('ApproximateNumberOfMessagesVisible', counts.visible);
      record('ApproximateNumberOfMessagesNotVisible', counts.inFlight);
      record('ApproximateNumberOfMessagesDelayed', counts.delayed);
    }));
  };
  let running: Promise<void> | undefined;
  const timer = setInterval(() => void (running ??= sample().finally(() => void (running = undefined))), options.intervalMs ?? 10_000);
  timer.unref();
  return { stop: () => clearInterval(timer), sample };
}
