import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MetricsCollector } from './metrics.ts';
import type { LocalAlarms } from '../cloudwatch/index.ts';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';

/** The dimensions ballast's EMF metrics carry (Powertools defaults plus ballast's own). */
const KNOWN_DIMENSIONS = ['service', 'workerVersion', 'reason'] as const;
const NAMESPACE = 'Ballast';
const TARGET_PREFIX = 'GraniteServiceVersion20100801.';

/** A running local CloudWatch endpoint; its `url` goes in `AWS_ENDPOINT_URL_CLOUDWATCH`. */
export type CloudWatchEndpoint = LocalEndpoint;

/**
 * A minimal CloudWatch API (the AWS JSON 1.0 protocol `@aws-sdk/client-cloudwatch` speaks) over
 * the EMF metrics the local cloud collected, so `ballast status` and `doctor` read metrics the
 * same way locally as on AWS:
 *
 * - `ListMetrics` (namespace `Ballast`): one metric per seen value of each single dimension
 *   (`service`, `workerVersion`, `reason`), because the collector keeps per-dimension totals;
 * - `GetMetricData`: one datapoint "now" holding the total since the cloud started (the collector
 *   keeps no time series, so `StartTime`/`EndTime` select nothing), `Maximum`/`pNN` from its
 *   samples; the request is still checked as CloudWatch checks it (`StartTime` before `EndTime`,
 *   each `MetricStat` with a `Period` of 1, 5, 10, 20, 30 or a multiple of 60 seconds);
 * - `DescribeAlarms`: the stack's alarms as the local cloud evaluates them (`LocalAlarms`), with
 *   their state, reason and last change; `AlarmNamePrefix` and `StateValue` filter as on AWS.
 *
 * Other namespaces (AWS/SQS, AWS/Lambda) have no data: callers fall back to what the queues and
 * tables show directly.
 */
export function serveCloudWatch(metrics: MetricsCollector, port = 0, alarms?: LocalAlarms): Promise<CloudWatchEndpoint> {
  return listenLocal((request, response) => handle(metrics, alarms, request, response), port);
}

async function handle(metrics: MetricsCollector, alarms: LocalAlarms | undefined, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = await readBody(request);
  const target = String(request.headers['x-amz-target'] ?? '');
  let input: Record<string, unknown> = {};
  try {
    input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
  } catch {
    return reply(response, 400, { __type: 'InvalidParameterValue', message: 'body is not JSON' });
  }
  const operation = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : target;
  switch (operation) {
    case 'ListMetrics':
      return reply(response, 200, { Metrics: listMetrics(metrics, input) });
    case 'GetMetricData': {
      const invalid = invalidGetMetricData(input);
      if (invalid) return reply(response, 400, invalid);
      return reply(response, 200, { MetricDataResults: getMetricData(metrics, input), Messages: [] });
    }
    case 'DescribeAlarms': {
      const prefix = typeof input.AlarmNamePrefix === 'string' ? input.AlarmNamePrefix : '';
      const statuses = (alarms?.statuses() ?? [])
        .filter((alarm) => alarm.name.startsWith(prefix) && (input.StateValue === undefined || alarm.state === input.StateValue));
      return reply(response, 200, {
        MetricAlarms: statuses.map((alarm) => ({
          AlarmName: alarm.name, StateValue: alarm.state, StateReason: alarm.reason, StateUpdatedTimestamp: alarm.changedAtMs / 1000,
        })),
        CompositeAlarms: [],
      });
    }
    case 'DescribeAlarmHistory': {
      // State changes and failed actions (a notification its topic refused), newest first, as CloudWatch keeps them.
      const name = typeof input.AlarmName === 'string' ? input.AlarmName : undefined;
      const items = [
        ...(alarms?.history() ?? []).map((item) => ({ AlarmName: item.name, AlarmType: 'MetricAlarm', HistoryItemType: 'StateUpdate', HistorySummary: `Alarm updated from ${item.from} to ${item.to}`, Timestamp: item.atMs / 1000 })),
        ...(alarms?.actions() ?? []).map((item) => ({ AlarmName: item.name, AlarmType: 'MetricAlarm', HistoryItemType: 'Action', HistorySummary: item.summary, Timestamp: item.atMs / 1000 })),
      ].filter((item) => (name === undefined || item.AlarmName === name) && (input.HistoryItemType === undefined || item.HistoryItemType === input.HistoryItemType))
        .sort((a, b) => b.Timestamp - a.Timestamp);
      return reply(response, 200, { AlarmHistoryItems: items.slice(0, Number(input.MaxRecords ?? 100)) });
    }
    default:
      return reply(response, 400, { __type: 'InvalidAction', message: `the local CloudWatch endpoint does not implement ${operation || '(no X-Amz-Target)'}` });
  }
}

interface Metric {
  readonly Namespace: string;
  readonly MetricName: string;
  readonly Dimensions: { Name: string; Value: string }[];
}

function listMetrics(metrics: MetricsCollector, input: Record<string, unknown>): Metric[] {
  if (input.Namespace !== NAMESPACE || typeof input.MetricName !== 'string') return [];
  const name = input.MetricName;
  return KNOWN_DIMENSIONS.flatMap((dimension) => Object.keys(metrics.breakdown(name, dimension))
    .map((value) => ({ Namespace: NAMESPACE, MetricName: name, Dimensions: [{ Name: dimension, Value: value }] })));
}

interface Query {
  readonly Id: string;
  readonly MetricStat?: { Metric?: Partial<Metric>; Stat?: string; Period?: number };
}

/** CloudWatch's own checks of a GetMetricData request, as its error body; undefined when valid. */
function invalidGetMetricData(input: Record<string, unknown>): { __type: string; message: string } | undefined {
  const { StartTime: start, EndTime: end } = input;
  if (start === undefined || end === undefined) return { __type: 'MissingParameter', message: 'StartTime and EndTime are required' };
  if (!(seconds(start) < seconds(end))) return { __type: 'InvalidParameterValue', message: 'The parameter StartTime must be less than the parameter EndTime.' };
  for (const query of (input.MetricDataQueries ?? []) as Query[]) {
    const period = query.MetricStat?.Period;
    if (query.MetricStat && (period === undefined || !validPeriod(period))) {
      return { __type: 'InvalidParameterValue', message: `The parameter MetricDataQueries.member.${query.Id}.MetricStat.Period must be 1, 5, 10, 20, 30 or a multiple of 60; got ${String(period)}.` };
    }
  }
  return undefined;
}

function validPeriod(period: number): boolean {
  return Number.isInteger(period) && period > 0 && ([1, 5, 10, 20, 30].includes(period) || period % 60 === 0);
}

/** A timestamp as the SDK sends it (epoch seconds) or as text. */
function seconds(value: unknown): number {
  return typeof value === 'number' ? value : Date.parse(String(value)) / 1000;
}

function getMetricData(metrics: MetricsCollector, input: Record<string, unknown>): unknown[] {
  const nowSeconds = Math.floor(Date.now() / 1000);
  return ((input.MetricDataQueries ?? []) as Query[]).map((query) => {
    const metric = query.MetricStat?.Metric;
    const stat = query.MetricStat?.Stat ?? 'Sum';
    let value: number | undefined;
    if (metric?.Namespace === NAMESPACE && metric.MetricName) {
      const dimension = [...(metric.Dimensions ?? [])].sort((a, b) => rank(a.Name) - rank(b.Name))[0];
      if (stat === 'Sum' || stat === 'SampleCount') {
        const sum = metrics.total(metric.MetricName, dimension ? { name: dimension.Name, value: dimension.Value } : undefined);
        value = sum === 0 ? undefined : sum;
      } else {
        const p = stat === 'Maximum' ? 100 : /^p(\d+(\.\d+)?)$/.test(stat) ? Number(stat.slice(1)) : undefined;
        value = p === undefined ? undefined : metrics.percentile(metric.MetricName, p);
      }
    }
    return {
      Id: query.Id,
      Label: metric?.MetricName ?? query.Id,
      Timestamps: value === undefined ? [] : [nowSeconds],
      Values: value === undefined ? [] : [value],
      StatusCode: 'Complete',
    };
  });
}

/** The most specific dimension answers a query (the collector keeps totals per single dimension). */
function rank(name: string): number {
  const order = ['reason', 'workerVersion', 'service'];
  const index = order.indexOf(name);
  return index === -1 ? order.length : index;
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
  response.end(JSON.stringify(body));
}
