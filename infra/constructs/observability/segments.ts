import { Duration } from 'aws-cdk-lib';
import { Color, ComparisonOperator, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { CustomMonitoringProps } from 'cdk-monitoring-constructs';
import { METRICS } from '../../../shared/observability/index.ts';
import { CACHE_METRICS } from '../../../shared/cache/metrics.ts';
import {
  GRAPH_PERIOD, cacheHitRatioPercent, duplicateRatePercent, duplicateRatePercentAllVersions, lambdaSearchByExecutedVersion,
  metricsInsightsSum, searchByVersion, type EmfSource,
} from './metrics.ts';

/** Evaluation window of the per-5-minutes alarms (lock contention, duplicate rate, read API errors). */
export const FIVE_MINUTES = Duration.minutes(5);
/** Share of the worker timeout at which the p99 duration alarm fires. */
export const DURATION_ALARM_PERCENT_OF_TIMEOUT = 80;

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
          {
            metric: duplicateRatePercent(props.worker, FIVE_MINUTES),
            alarmFriendlyName: 'DuplicateRate',
            addAlarm: {
              Critical: {
                threshold: props.duplicateRatePercent,
                comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                alarmDescriptionOverride: props.duplicateRateDescription,
              },
            },
          },
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

/** Lock contention (alarmed over every version), lock wait p99 and fenced commits by version. */
export function locks(props: LocksSegmentProps): CustomMonitoringProps {
  return {
    humanReadableName: 'Locks',
    alarmFriendlyName: 'Locks',
    metricGroups: [
      {
        title: 'Lock contention per 5 minutes (all versions)',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [
          {
            metric: metricsInsightsSum(METRICS.lockContention, FIVE_MINUTES),
            alarmFriendlyName: 'Contention',
            addAlarm: {
              Critical: {
                threshold: props.lockContentionPer5Minutes,
                comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                alarmDescriptionOverride: props.lockContentionDescription,
              },
            },
          },
        ],
      },
      {
        title: 'Lock contention by version',
        graphWidgetAxis: COUNT_AXIS,
        metrics: [searchByVersion([METRICS.lockContention])],
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
    ],
  };
}

/** Cache: hit ratio, reads by version, invalidation lag, refused fills by reason, repaired invalidations. */
export function cache(): CustomMonitoringProps {
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
          {
            metric: url('Url5xxCount', '5xx'),
            alarmFriendlyName: 'ServerErrors',
            addAlarm: {
              Critical: {
                threshold: props.serverErrorsPer5Minutes,
                comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                alarmDescriptionOverride: props.serverErrorsDescription,
              },
            },
          },
        ],
      },
    ],
  };
}
