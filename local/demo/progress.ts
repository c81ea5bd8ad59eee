import type { QueueCounts } from '../../shared/queues/index.ts';
import type { MetricsCollector } from '../cloud/metrics.ts';

/** What the live display and the summary show, read from the local CloudWatch stand-in. */
export interface ProgressSnapshot {
  readonly processed: number;
  readonly duplicates: number;
  readonly retries: number;
  readonly deadLettered: Record<string, number>;
  readonly cacheHitRatio: number | undefined;
  readonly invalidationLagP50Ms: number | undefined;
  readonly invalidationLagP99Ms: number | undefined;
}

export function snapshot(metrics: MetricsCollector): ProgressSnapshot {
  const hits = metrics.total('CacheHits');
  const reads = hits + metrics.total('CacheMisses') + metrics.total('CacheFallbacks');
  return {
    processed: metrics.total('JobsProcessed'),
    duplicates: metrics.total('DuplicatesSuppressed'),
    retries: metrics.total('JobsRetried'),
    deadLettered: metrics.breakdown('SentToDlq', 'reason'),
    cacheHitRatio: reads > 0 ? hits / reads : undefined,
    invalidationLagP50Ms: metrics.percentile('InvalidationLagMs', 50),
    invalidationLagP99Ms: metrics.percentile('InvalidationLagMs', 99),
  };
}

/** One line for the live display. */
export function progressLine(elapsedMs: number, sent: number, total: number, depth: QueueCounts, s: ProgressSnapshot): string {
  const dlq = Object.entries(s.deadLettered);
  const dlqTotal = dlq.reduce((sum, [, n]) => sum + n, 0);
  const ms = (value: number | undefined) => (value === undefined ? '-' : `${Math.round(value)}ms`);
  return [
    `[${String(Math.round(elapsedMs / 1000)).padStart(3)}s]`,
    `sent ${sent}/${total}`,
    `queue ${depth.visible} (in flight ${depth.inFlight}, delayed ${depth.delayed})`,
    `processed ${s.processed}`,
    `duplicates ${s.duplicates}`,
    `retries ${s.retries}`,
    `DLQ ${dlqTotal}${dlq.length ? ` (${dlq.map(([reason, n]) => `${reason} ${n}`).join(', ')})` : ''}`,
    `cache hit ${s.cacheHitRatio === undefined ? '-' : `${Math.round(s.cacheHitRatio * 100)}%`}`,
    `invalidation lag p50 ${ms(s.invalidationLagP50Ms)} p99 ${ms(s.invalidationLagP99Ms)}`,
  ].join(' | ');
}
