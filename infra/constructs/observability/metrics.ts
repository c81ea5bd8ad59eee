import { Duration } from 'aws-cdk-lib';
import { MathExpression, Metric, Stats } from 'aws-cdk-lib/aws-cloudwatch';
import { METRICS } from '../../../shared/observability/index.ts';
import { CACHE_METRICS } from '../../../shared/cache/metrics.ts';

/** Namespace of every EMF metric ballast's functions emit (`shared/observability`). */
export const BALLAST_NAMESPACE = 'Ballast';

/**
 * The EMF dimension sets Powertools writes: `service` (from POWERTOOLS_SERVICE_NAME) and
 * `workerVersion` on every metric, plus `reason` on the ones counted by reason
 * (`countByReason`). A SEARCH schema matches only metrics with exactly these dimensions.
 */
const VERSION_SCHEMA = `{${BALLAST_NAMESPACE},service,workerVersion}`;
const REASON_SCHEMA = `{${BALLAST_NAMESPACE},reason,service,workerVersion}`;

/** Dashboard resolution of the EMF graphs. */
export const GRAPH_PERIOD = Duration.minutes(1);

/** Legend of a per-version series: `JobsProcessed v1.4.0`. */
const VERSION_LABEL = "${PROP('MetricName')} v${PROP('Dim.workerVersion')}";
/** Legend of a per-reason series: `lock-busy (v1.4.0)`. */
const REASON_LABEL = "${PROP('Dim.reason')} (v${PROP('Dim.workerVersion')})";

export interface SearchOptions {
  /** @default 'Sum' */
  readonly statistic?: string;
  /** @default GRAPH_PERIOD */
  readonly period?: Duration;
  /** Also split by the `reason` dimension (JobsRetried, SentToDlq, CacheFillsRefused). @default false */
  readonly byReason?: boolean;
  /** @default - metric name and version (and reason) */
  readonly label?: string;
}

function searchText(metricNames: readonly string[], options: SearchOptions): string {
  const schema = options.byReason ? REASON_SCHEMA : VERSION_SCHEMA;
  const names = metricNames.map((name) => `MetricName="${name}"`).join(' OR ');
  const period = (options.period ?? GRAPH_PERIOD).toSeconds();
  return `SEARCH('${schema} ${metricNames.length > 1 ? `(${names})` : names}', '${options.statistic ?? Stats.SUM}', ${period})`;
}

/**
 * One line per worker version (and reason) of EMF metrics, found by a CloudWatch SEARCH: a new
 * version shows up on the dashboard as soon as it emits, with no deployment. Graphs only — CloudWatch
 * refuses SEARCH in alarms (see {@link metricsInsightsSum}).
 *
 * @example
 * searchByVersion([METRICS.duplicates]); // SEARCH('{Ballast,service,workerVersion} MetricName="DuplicatesSuppressed"', 'Sum', 60)
 */
export function searchByVersion(metricNames: readonly string[], options: SearchOptions = {}): MathExpression {
  return new MathExpression({
    expression: searchText(metricNames, options),
    usingMetrics: {},
    label: options.label ?? (options.byReason ? REASON_LABEL : VERSION_LABEL),
    period: options.period ?? GRAPH_PERIOD,
  });
}

/**
 * `numerator` as a percentage of `denominator`, each summed over every version by SEARCH, so the
 * ratio covers a rollout's old and new versions together. Graphs only.
 */
export function percentOverVersions(label: string, numerator: readonly string[], denominator: readonly string[]): MathExpression {
  return new MathExpression({
    expression: `100 * SUM(${searchText(numerator, {})}) / SUM(${searchText(denominator, {})})`,
    usingMetrics: {},
    label,
    period: GRAPH_PERIOD,
  });
}

/**
 * The sum of one EMF metric over every service and version, as a CloudWatch Metrics Insights query:
 * the one form of "all versions, including future ones" an alarm accepts (one query per alarm,
 * evaluated over the last 3 hours). `reason` narrows a by-reason metric to one reason.
 *
 * @example
 * metricsInsightsSum(METRICS.lockContention, Duration.minutes(5));
 * // SELECT SUM(LockContention) FROM SCHEMA("Ballast", service, workerVersion)
 * metricsInsightsSum(CACHE_METRICS.breakerTransitions, Duration.minutes(5), { reason: 'open' });
 * // SELECT SUM(CacheBreakerTransitions) FROM SCHEMA("Ballast", reason, service, workerVersion) WHERE reason = 'open'
 */
export function metricsInsightsSum(metricName: string, period: Duration, options: { label?: string; byReason?: boolean; reason?: string } = {}): MathExpression {
  const byReason = options.byReason ?? options.reason !== undefined;
  const schema = `SCHEMA("${BALLAST_NAMESPACE}", ${byReason ? 'reason, ' : ''}service, workerVersion)`;
  return new MathExpression({
    expression: `SELECT SUM(${metricName}) FROM ${schema}${options.reason ? ` WHERE reason = '${options.reason}'` : ''}`,
    usingMetrics: {},
    label: options.label ?? `${metricName}${options.reason ? ` (${options.reason})` : ''} (all versions)`,
    period,
  });
}

/** Which emitter an alarm on an explicit EMF series watches. */
export interface EmfSource {
  /** The `service` dimension: the function's POWERTOOLS_SERVICE_NAME. */
  readonly service: string;
  /** The `workerVersion` dimension: WORKER_VERSION of the deployed code. */
  readonly workerVersion: string;
}

function emfMetric(metricName: string, source: EmfSource, period: Duration): Metric {
  return new Metric({
    namespace: BALLAST_NAMESPACE,
    metricName,
    dimensionsMap: { service: source.service, workerVersion: source.workerVersion },
    statistic: Stats.SUM,
    period,
  });
}

/**
 * DuplicatesSuppressed / (JobsProcessed + DuplicatesSuppressed) × 100 for one deployed version.
 * A ratio needs two series, and an alarm can hold one Metrics Insights query and no SEARCH, so this
 * names the version explicitly: the one this stack deployed (during a canary, the new one).
 */
export function duplicateRatePercent(source: EmfSource, period: Duration): MathExpression {
  return new MathExpression({
    expression: '100 * FILL(duplicates, 0) / (FILL(processed, 0) + FILL(duplicates, 0))',
    usingMetrics: {
      duplicates: emfMetric(METRICS.duplicates, source, period),
      processed: emfMetric(METRICS.processed, source, period),
    },
    label: `Duplicate rate % (v${source.workerVersion})`,
    period,
  });
}

/** Cache reads answered from Redis, as a percentage of all reads (hits, misses, fallbacks), all versions. */
export function cacheHitRatioPercent(): MathExpression {
  return percentOverVersions('Cache hit ratio % (all versions)', [CACHE_METRICS.hits],
    [CACHE_METRICS.hits, CACHE_METRICS.misses, CACHE_METRICS.fallbacks]);
}

/** Duplicates suppressed as a percentage of all jobs seen, all versions. */
export function duplicateRatePercentAllVersions(): MathExpression {
  return percentOverVersions('Duplicate rate % (all versions)', [METRICS.duplicates], [METRICS.processed, METRICS.duplicates]);
}

/**
 * A Lambda metric per executed version behind an alias (the `ExecutedVersion` dimension), so a
 * canary's new version and the old one are separate lines. Graphs only.
 */
export function lambdaSearchByExecutedVersion(functionName: string, metricName: string, statistic: string): MathExpression {
  return new MathExpression({
    expression: `SEARCH('{AWS/Lambda,ExecutedVersion,FunctionName,Resource} FunctionName="${functionName}" MetricName="${metricName}"', `
      + `'${statistic}', ${GRAPH_PERIOD.toSeconds()})`,
    usingMetrics: {},
    label: `${metricName} ${statistic} version \${PROP('Dim.ExecutedVersion')}`,
    period: GRAPH_PERIOD,
  });
}
