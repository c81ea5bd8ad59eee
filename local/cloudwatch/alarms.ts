import { evaluateExpression, UnsupportedExpressionError } from './metric-math.ts';
import { periodStart, type Datapoints, type MetricSeries } from './series.ts';

/** An alarm's state, as CloudWatch names it. */
export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';

/** An `AWS::CloudWatch::Alarm` of the template, its intrinsics already resolved. */
export interface AlarmDefinition {
  readonly logicalId: string;
  readonly name: string;
  readonly comparison: 'GreaterThanOrEqualToThreshold' | 'GreaterThanThreshold' | 'LessThanThreshold' | 'LessThanOrEqualToThreshold';
  readonly threshold: number;
  readonly evaluationPeriods: number;
  readonly datapointsToAlarm: number;
  readonly treatMissingData: 'breaching' | 'notBreaching' | 'ignore' | 'missing';
  readonly periodSeconds: number;
  /** The alarm's datapoints over a window. @throws UnsupportedExpressionError when it cannot be computed locally */
  datapoints(series: MetricSeries, startMs: number, endMs: number): Datapoints;
}

/** What one evaluation decided. */
export interface AlarmEvaluation {
  readonly state: AlarmState;
  /** In CloudWatch's words: the datapoints and why. */
  readonly reason: string;
  /** The evaluated periods, oldest first (undefined: no datapoint). */
  readonly datapoints: readonly (number | undefined)[];
}

interface MetricStatProps {
  readonly Metric: { readonly Namespace: string; readonly MetricName: string; readonly Dimensions?: readonly { Name: string; Value: string }[] };
  readonly Stat: string;
  readonly Period: number;
}

/**
 * Reads an alarm's resolved properties: a single metric (`Namespace`, `MetricName`,
 * `Dimensions`, `Statistic`/`ExtendedStatistic`, `Period`) or `Metrics` (metric stats, metric
 * math, or a Metrics Insights `SELECT ... FROM SCHEMA(...)`), whichever one `ReturnData` marks.
 */
export function alarmDefinition(logicalId: string, props: Readonly<Record<string, unknown>>): AlarmDefinition {
  const p = props as Record<string, any>;
  const base = {
    logicalId,
    name: String(p.AlarmName ?? logicalId),
    comparison: p.ComparisonOperator as AlarmDefinition['comparison'],
    threshold: Number(p.Threshold),
    evaluationPeriods: Number(p.EvaluationPeriods),
    datapointsToAlarm: Number(p.DatapointsToAlarm ?? p.EvaluationPeriods),
    treatMissingData: (p.TreatMissingData ?? 'missing') as AlarmDefinition['treatMissingData'],
  };
  if (!p.Metrics) {
    const stat: MetricStatProps = {
      Metric: { Namespace: p.Namespace, MetricName: p.MetricName, Dimensions: p.Dimensions }, Stat: String(p.ExtendedStatistic ?? p.Statistic), Period: Number(p.Period),
    };
    return { ...base, periodSeconds: stat.Period, datapoints: (series, startMs, endMs) => metricStat(series, stat, startMs, endMs) };
  }
  const queries = p.Metrics as { Id: string; Expression?: string; MetricStat?: MetricStatProps; Period?: number; ReturnData?: boolean }[];
  const returned = queries.find((q) => q.ReturnData !== false) ?? queries[0];
  if (!returned) throw new UnsupportedExpressionError(`alarm ${logicalId}: Metrics is empty`);
  const periodSeconds = Number(returned.MetricStat?.Period ?? returned.Period ?? queries.find((q) => q.MetricStat)?.MetricStat?.Period ?? 60);
  return {
    ...base,
    periodSeconds,
    datapoints(series, startMs, endMs) {
      if (returned.MetricStat) return metricStat(series, returned.MetricStat, startMs, endMs);
      const expression = String(returned.Expression);
      if (/^\s*SELECT\b/i.test(expression)) return insights(series, expression, periodSeconds, startMs, endMs);
      const inputs = new Map(queries.filter((q) => q.MetricStat).map((q) => [q.Id, metricStat(series, q.MetricStat as MetricStatProps, startMs, endMs)]));
      const timeline: number[] = [];
      for (let t = periodStart(startMs, periodSeconds); t < endMs; t += periodSeconds * 1000) timeline.push(t);
      return evaluateExpression(expression, { series: inputs, timeline });
    },
  };
}

/**
 * Evaluates an alarm as CloudWatch does over its last `evaluationPeriods` complete periods before
 * `nowMs`: ALARM when at least `datapointsToAlarm` of them breach, missing datapoints counting as
 * `treatMissingData` says (`ignore` keeps `previous`; `missing` with no datapoint at all is
 * INSUFFICIENT_DATA), OK otherwise. An alarm that cannot be computed locally is INSUFFICIENT_DATA,
 * its reason saying why.
 */
export function evaluateAlarm(alarm: AlarmDefinition, series: MetricSeries, nowMs: number, previous: AlarmState = 'INSUFFICIENT_DATA'): AlarmEvaluation {
  const periodMs = alarm.periodSeconds * 1000;
  const endMs = periodStart(nowMs, alarm.periodSeconds);
  const startMs = endMs - alarm.evaluationPeriods * periodMs;
  let points: Datapoints;
  try {
    points = alarm.datapoints(series, startMs, endMs);
  } catch (error) {
    if (!(error instanceof UnsupportedExpressionError)) throw error;
    return { state: 'INSUFFICIENT_DATA', reason: `not evaluated locally: ${error.message}`, datapoints: [] };
  }
  const datapoints = Array.from({ length: alarm.evaluationPeriods }, (_, i) => points.get(startMs + i * periodMs));
  const present = datapoints.filter((value): value is number => value !== undefined);
  const breaches = (value: number) => {
    switch (alarm.comparison) {
      case 'GreaterThanOrEqualToThreshold': return value >= alarm.threshold;
      case 'GreaterThanThreshold': return value > alarm.threshold;
      case 'LessThanThreshold': return value < alarm.threshold;
      default: return value <= alarm.threshold;
    }
  };
  const shown = `[${datapoints.map((value) => (value === undefined ? '-' : String(Number(value.toFixed(3))))).join(', ')}]`;
  if (present.length === 0) {
    if (alarm.treatMissingData === 'ignore') return { state: previous, reason: `no datapoints ${shown}: state kept (treatMissingData ignore)`, datapoints };
    if (alarm.treatMissingData === 'missing') return { state: 'INSUFFICIENT_DATA', reason: `no datapoints ${shown}`, datapoints };
  }
  const missingBreach = alarm.treatMissingData === 'breaching';
  const breaching = datapoints.filter((value) => (value === undefined ? missingBreach : breaches(value))).length;
  const state: AlarmState = breaching >= alarm.datapointsToAlarm ? 'ALARM' : 'OK';
  return {
    state,
    reason: `${breaching} of the last ${alarm.evaluationPeriods} datapoints ${shown} ${alarm.comparison} ${alarm.threshold} (${alarm.datapointsToAlarm} needed)`,
    datapoints,
  };
}

function metricStat(series: MetricSeries, stat: MetricStatProps, startMs: number, endMs: number): Datapoints {
  const dimensions = Object.fromEntries((stat.Metric.Dimensions ?? []).map((d) => [d.Name, String(d.Value)]));
  return series.stat({ metric: { namespace: stat.Metric.Namespace, name: stat.Metric.MetricName, dimensions }, stat: stat.Stat, periodSeconds: stat.Period, startMs, endMs });
}

const INSIGHTS = /^\s*SELECT\s+(SUM|AVG|MIN|MAX|COUNT)\((\w+)\)\s+FROM\s+SCHEMA\(\s*"([^"]+)"((?:\s*,\s*\w+)*)\s*\)(?:\s+WHERE\s+(.+?))?\s*$/i;
const STAT_OF = { SUM: 'Sum', AVG: 'Average', MIN: 'Minimum', MAX: 'Maximum', COUNT: 'SampleCount' } as const;

/** A Metrics Insights query of the one shape ballast's alarms and dashboard use: an aggregate over a schema, optionally `WHERE dim = 'value' [AND ...]`. */
export function insights(series: MetricSeries, query: string, periodSeconds: number, startMs: number, endMs: number): Datapoints {
  const match = INSIGHTS.exec(query);
  if (!match) throw new UnsupportedExpressionError(`Metrics Insights query not evaluated locally: ${query}`);
  const [, aggregate, name, namespace, dimensionList, whereText] = match as unknown as [string, keyof typeof STAT_OF, string, string, string, string | undefined];
  const where: Record<string, string> = {};
  for (const condition of whereText ? whereText.split(/\s+AND\s+/i) : []) {
    const equal = /^(\w+)\s*=\s*'([^']*)'$/.exec(condition.trim());
    if (!equal) throw new UnsupportedExpressionError(`Metrics Insights condition not evaluated locally: ${condition}`);
    where[equal[1] as string] = equal[2] as string;
  }
  const dimensions = dimensionList.split(',').map((d) => d.trim()).filter(Boolean);
  return series.statAcross(namespace, name, dimensions, where, { stat: STAT_OF[aggregate.toUpperCase() as keyof typeof STAT_OF], periodSeconds, startMs, endMs });
}
