import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/** Metric names ballast emits (namespace `Ballast`, dimensioned by `workerVersion`). */
export const METRICS = {
  processed: 'JobsProcessed',
  duplicates: 'DuplicatesSuppressed',
  retries: 'JobsRetried',
  sentToDlq: 'SentToDlq',
  lockContention: 'LockContention',
  /** How long a record that met a held lock waits before trying it again (its backoff, at most the holder's remaining lease). */
  lockWaitMs: 'LockWaitMs',
  fenced: 'CommitsFenced',
  /** Records still meeting a held lock on their last receive, sent to their queue again rather than dead-lettered. */
  lockRequeues: 'LockWaitRequeues',
  /** Commits (and claims given back) tried again in place after a `TransactionConflict` on a hot item. */
  commitConflicts: 'CommitConflicts',
} as const;

export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly workerVersion: string;
}

export interface ObservabilityOptions {
  /** @default process.env.POWERTOOLS_SERVICE_NAME ?? 'ballast' */
  readonly serviceName?: string;
  /** @default 'Ballast' */
  readonly namespace?: string;
  /** The deployed code's version: every log line and metric carries it. */
  readonly workerVersion: string;
}

/**
 * One Powertools logger and metrics pair per container, both stamped with the worker version so
 * dashboards and log queries can split everything by version during a rollout.
 */
export function createObservability(options: ObservabilityOptions): Observability {
  const serviceName = options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'ballast';
  return {
    workerVersion: options.workerVersion,
    logger: new Logger({ serviceName, persistentKeys: { workerVersion: options.workerVersion } }),
    metrics: new Metrics({
      serviceName,
      namespace: options.namespace ?? 'Ballast',
      defaultDimensions: { workerVersion: options.workerVersion },
    }),
  };
}

/** Adds `value` to a metric that also carries a `reason` dimension (emitted at once, on its own). */
export function countByReason(observability: Observability, name: string, reason: string, value = 1): void {
  const metric = observability.metrics.singleMetric();
  metric.addDimension('reason', reason);
  metric.addMetric(name, MetricUnit.Count, value);
}

export { MetricUnit };
