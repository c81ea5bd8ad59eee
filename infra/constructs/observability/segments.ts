import { Duration } from 'aws-cdk-lib';
import { Color, ComparisonOperator, MathExpression, Metric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { CustomMonitoringProps } from 'cdk-monitoring-constructs';
import { METRICS } from '../../../shared/observability/index.ts';
import { DURATION_ALARM_PERCENT_OF_TIMEOUT } from '../queue-worker.ts';
import { CACHE_METRICS } from '../../../shared/cache/metrics.ts';
import {
  GRAPH_PERIOD, cacheHitRatioPercent, duplicateRatePercent, duplicateRatePercentAllVersions, lambdaSearchByExecutedVersion,
  metricsInsightsSum, searchByVersion, type EmfSource,
} from './metrics.ts';

/** Evaluation window of the per-5-minutes alarms (lock contention, duplicate rate, read API errors). */
export const FIVE_MINUTES = Duration.minutes(5);

const PERCENT_AXIS = { min: 0, max: 100, label: '%', showUnits: false };
const COUNT_AXIS = { min: 0, showUnits: false };
const MILLIS_AXIS = { min: 0, label: 'ms', showUnits: false };

export interface WorkerSegmentProps {
  readonly queue: IQueue;
  /** The `live` alias the event source mapping invokes. */
  readonly alias: IFunction;
  /** The function behind the alias (its name scopes the per-version search). */
  readonly functionName: string;
  readonly timeout: Duration;
}

/**
 * Deliveries and duration: receives vs deletes (a gap is redelivery) and p99 duration per executed
 * version against the timeout. The p99 alarm itself lives on the facade's Lambda monitoring.
 */
export function workerDeliveries(props: WorkerSegmentProps): CustomMonitoringProps {
  const timeoutMs = props.timeout.toMilliseconds();
  return {
    humanReadableName: 'Worker deliveries and duration',
    alarmFriendlyName: 'WorkerDeliveries',
    metricGroups: [
      {
        title: 'Jobs queue: receives vs deletes (gap = redeliveries)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          props.queue.metricNumberOfMessagesReceived({ statistic: Stats.SUM, period: GRAPH_PERIOD, label: 'Received' }),
          props.queue.metricNumberOfMessagesDeleted({ statistic: Stats.SUM, period: GRAPH_PERIOD, label: 'Deleted' }),
        ],
      },
      {
        title: 'Worker duration p99 vs timeout',
        graphWidgetAxis: { ...MILLIS_AXIS, max: Math.ceil(timeoutMs * 1.1) },
        metrics: [
          props.alias.metricDuration({ statistic: Stats.p(99), period: GRAPH_PERIOD, label: 'p99 (live alias)' }),
          lambdaSearchByExecutedVersion(props.functionName, 'Duration', Stats.p(99)),
        ],
        horizontalAnnotations: [
          { value: timeoutMs, label: `Timeout (${props.timeout.toSeconds()} s)`, color: Color.RED },
          { value: Math.floor((timeoutMs * DURATION_ALARM_PERCENT_OF_TIMEOUT) / 100), label: `${DURATION_ALARM_PERCENT_OF_TIMEOUT} % of timeout (alarm)`, color: Color.ORANGE },
        ],
      },
    ],
  };
}

export interface JobsSegmentProps {
  readonly worker: EmfSource;
  readonly duplicateRatePercent: number;
  readonly duplicateRateDescription: string;
}

/** Jobs by version: processed and duplicates, the duplicate rate (alarmed), retries and dead letters by reason. */
export function jobsByVersion(props: JobsSegmentProps): CustomMonitoringProps {
  return {
    humanReadableName: 'Jobs by worker version',
    alarmFriendlyName: 'Jobs',
    metricGroups: [
      {
        title: 'Jobs processed and duplicates suppressed',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.processed, METRICS.duplicates])],
      },
      {
        title: 'Duplicate rate',
        graphWidgetAxis: PERCENT_AXIS,
        metrics: [
          { metric: duplicateRatePercent(props.worker, FIVE_MINUTES), ...atOrAbove(props.duplicateRatePercent, props.duplicateRateDescription, 'DuplicateRate') },
          duplicateRatePercentAllVersions(),
        ],
      },
      {
        title: 'Jobs retried by reason',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.retries], { byReason: true })],
      },
      {
        title: 'Jobs sent to the DLQ by reason',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.sentToDlq], { byReason: true })],
      },
    ],
  };
}

export interface LocksSegmentProps {
  readonly lockContentionPer5Minutes: number;
  readonly lockContentionDescription: string;
}

/**
 * Lock contention (alarmed over every version), lock wait p99, fenced commits and commits retried
 * after a `TransactionConflict` by version (contention on hot items that never reaches the queue).
 */
export function locks(props: LocksSegmentProps): CustomMonitoringProps {
  return {
    humanReadableName: 'Locks',
    alarmFriendlyName: 'Locks',
    metricGroups: [
      {
        title: 'Lock contention per 5 minutes (all versions)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          { metric: metricsInsightsSum(METRICS.lockContention, FIVE_MINUTES), ...atOrAbove(props.lockContentionPer5Minutes, props.lockContentionDescription, 'Contention') },
        ],
      },
      {
        title: 'Lock contention by version',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.lockContention, METRICS.lockRequeues])],
      },
      {
        title: 'Lock wait p99',
        graphWidgetAxis: MILLIS_AXIS,
        metrics: [searchByVersion([METRICS.lockWaitMs], { statistic: Stats.p(99) })],
      },
      {
        title: 'Commits fenced (stale lock holders)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.fenced])],
      },
      {
        title: 'Commits retried in place after a transaction conflict (hot items)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.commitConflicts])],
      },
    ],
  };
}

/** An alarm at or above `threshold`, quiet while no data arrives, with its runbook text. */
function atOrAbove(threshold: number, description: string, alarmFriendlyName: string) {
  return {
    alarmFriendlyName,
    addAlarm: {
      Critical: {
        threshold,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
        alarmDescriptionOverride: description,
      },
    },
  };
}

export interface CacheSegmentProps {
  /** The serverless cache's name: the `clusterId` dimension of its AWS/ElastiCache metrics. */
  readonly cacheName: string;
  readonly fallbacksPer5Minutes: number;
  readonly throttledCommandsPer5Minutes: number;
  readonly descriptions: { readonly fallbacks: string; readonly breakerOpened: string; readonly invalidationsSkipped: string; readonly throttledCommands: string };
}

/**
 * Cache: hit ratio, reads by version, invalidation lag, refused fills by reason, repaired
 * invalidations; alarms on reads falling back to the table, the breaker opening, skipped
 * invalidations (all versions) and commands ElastiCache throttled.
 */
export function cache(props: CacheSegmentProps): CustomMonitoringProps {
  // Serverless caches publish under `clusterId` (node-based clusters use CacheClusterId).
  const throttled = new Metric({
    namespace: 'AWS/ElastiCache', metricName: 'ThrottledCmds', dimensionsMap: { clusterId: props.cacheName },
    statistic: Stats.SUM, period: FIVE_MINUTES, label: 'Commands throttled by ElastiCache',
  });
  return {
    humanReadableName: 'Cache',
    alarmFriendlyName: 'Cache',
    metricGroups: [
      { title: 'Cache hit ratio', graphWidgetAxis: PERCENT_AXIS, metrics: [cacheHitRatioPercent()] },
      {
        title: 'Cache reads by version',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([CACHE_METRICS.hits, CACHE_METRICS.misses, CACHE_METRICS.fallbacks])],
      },
      {
        title: 'Cache trouble per 5 minutes (all versions)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          { metric: metricsInsightsSum(CACHE_METRICS.fallbacks, FIVE_MINUTES), ...atOrAbove(props.fallbacksPer5Minutes, props.descriptions.fallbacks, 'Fallbacks') },
          {
            metric: metricsInsightsSum(CACHE_METRICS.breakerTransitions, FIVE_MINUTES, { reason: 'open' }),
            ...atOrAbove(1, props.descriptions.breakerOpened, 'BreakerOpened'),
          },
          {
            metric: metricsInsightsSum(CACHE_METRICS.invalidationsSkipped, FIVE_MINUTES, { byReason: true }),
            ...atOrAbove(1, props.descriptions.invalidationsSkipped, 'InvalidationsSkipped'),
          },
          { metric: throttled, ...atOrAbove(props.throttledCommandsPer5Minutes, props.descriptions.throttledCommands, 'ThrottledCommands') },
        ],
      },
      {
        title: 'Invalidation lag (commit to tombstone)',
        graphWidgetAxis: MILLIS_AXIS,
        metrics: [
          searchByVersion([CACHE_METRICS.invalidationLagMs], { statistic: Stats.p(99), label: "p99 v${PROP('Dim.workerVersion')}" }),
          searchByVersion([CACHE_METRICS.invalidationLagMs], { statistic: Stats.MAXIMUM, label: "max v${PROP('Dim.workerVersion')}" }),
        ],
      },
      {
        title: 'Cache fills refused by reason',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([CACHE_METRICS.fillsRefused], { byReason: true })],
      },
      {
        title: 'Failed invalidations repaired (records re-applied; full-reconcile fallbacks by reason)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          searchByVersion([CACHE_METRICS.invalidationsRepaired]),
          searchByVersion([CACHE_METRICS.invalidationRepairFallbacks], { byReason: true }),
        ],
      },
    ],
  };
}

export interface TableErrorsSegmentProps {
  /** The tables, by the name their line and alarm get. */
  readonly tables: readonly { readonly name: string; readonly tableName: string }[];
  readonly systemErrorsPer5Minutes: number;
  readonly description: (tableName: string) => string;
}

/**
 * DynamoDB system errors (HTTP 500s) per table over every operation — transactions and stream reads
 * included, which per-operation metric lists tend to miss — as one Metrics Insights query each.
 */
export function tableSystemErrors(props: TableErrorsSegmentProps): CustomMonitoringProps {
  return {
    humanReadableName: 'DynamoDB system errors',
    alarmFriendlyName: 'Tables',
    metricGroups: [{
      title: 'DynamoDB system errors per 5 minutes (every operation)',
      graphWidgetAxis: COUNT_AXIS,
      metrics: props.tables.map((table) => ({
        metric: new MathExpression({
          expression: `SELECT SUM(SystemErrors) FROM SCHEMA("AWS/DynamoDB", Operation, TableName) WHERE TableName = '${table.tableName}'`,
          usingMetrics: {},
          label: `${table.name} system errors`,
          period: FIVE_MINUTES,
        }),
        ...atOrAbove(props.systemErrorsPer5Minutes, props.description(table.name), `${table.name}SystemErrors`),
      })),
    }],
  };
}

export interface EventSourceMappingsSegmentProps {
  /** Each SQS or stream mapping with its `EventSourceMappingUUID` (MetricsConfig EventCount on). */
  readonly mappings: readonly { readonly name: string; readonly id: string }[];
}

/** What Lambda's pollers did with each mapping's events: polled, invoked, failed, deleted, dropped, filtered out. */
export function eventSourceMappings(props: EventSourceMappingsSegmentProps): CustomMonitoringProps {
  const counts = ['PolledEventCount', 'InvokedEventCount', 'FailedInvokeEventCount', 'DeletedEventCount', 'DroppedEventCount', 'FilteredOutEventCount'];
  return {
    humanReadableName: 'Event source mappings (Lambda pollers)',
    alarmFriendlyName: 'Mappings',
    metricGroups: props.mappings.map((mapping) => ({
      title: `${mapping.name}: events per minute`,
      graphWidgetAxis: COUNT_AXIS,
      metrics: counts.map((metricName) => new Metric({
        namespace: 'AWS/Lambda', metricName, dimensionsMap: { EventSourceMappingUUID: mapping.id },
        statistic: Stats.SUM, period: GRAPH_PERIOD, label: metricName.replace(/EventCount$/, ''),
      })),
    })),
  };
}

export interface ReadApiSegmentProps {
  readonly readApi: IFunction;
  readonly serverErrorsPer5Minutes: number;
  readonly serverErrorsDescription: string;
}

/**
 * Read API responses at its function URL. 5xx counts what callers saw: failures the function
 * catches and answers with 500 (which Lambda's Errors metric never counts) as well as crashes and
 * timeouts.
 */
export function readApiResponses(props: ReadApiSegmentProps): CustomMonitoringProps {
  const url = (metricName: string, label: string) =>
    props.readApi.metric(metricName, { statistic: Stats.SUM, period: FIVE_MINUTES, label });
  return {
    humanReadableName: 'Read API responses (function URL)',
    alarmFriendlyName: 'ReadApi',
    metricGroups: [
      {
        title: 'Read API responses per 5 minutes',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          url('UrlRequestCount', 'Requests'),
          url('Url4xxCount', '4xx'),
          { metric: url('Url5xxCount', '5xx'), ...atOrAbove(props.serverErrorsPer5Minutes, props.serverErrorsDescription, 'ServerErrors') },
        ],
      },
    ],
  };
}
