import { insights } from './alarms.ts';
import { evaluateExpression, UnsupportedExpressionError } from './metric-math.ts';
import { searchCalls, searchMetrics } from './search.ts';
import { periodStart, type Datapoints, type MetricIdentity, type MetricSeries } from './series.ts';

/** The time window a dashboard is looked at over, and the period its widgets are drawn at. */
export interface WidgetWindow {
  /** Epoch ms on the metric clock, inclusive. */
  readonly startMs: number;
  /** Epoch ms, exclusive. */
  readonly endMs: number;
  /**
   * The dashboard's period override (`periodOverride: inherit` lets the viewer set it): every
   * query of every widget is drawn at this period, as CloudWatch does when one is chosen.
   */
  readonly periodSeconds: number;
}

/** One line of a metric widget. */
export interface WidgetLine {
  /** The label, with `${PROP(...)}` and `${AVG}`-style placeholders filled in. */
  readonly label: string;
  readonly yAxis: 'left' | 'right';
  /** [period start (epoch ms), value], oldest first. */
  readonly points: readonly (readonly [number, number])[];
}

/** What a metric widget draws: its visible lines, and each query the local CloudWatch could not answer. */
export interface WidgetData {
  readonly lines: readonly WidgetLine[];
  readonly errors: readonly string[];
}

/** A metric widget's `properties`, as the dashboard body holds them. */
export interface MetricWidgetProperties {
  readonly metrics?: readonly (readonly unknown[])[];
  readonly stat?: string;
  readonly period?: number;
}

type Options = { id?: string; label?: string; stat?: string; visible?: boolean; yAxis?: 'left' | 'right'; expression?: string };

interface Query {
  readonly id: string;
  readonly options: Options;
  readonly metric?: MetricIdentity;
}

/**
 * Answers a dashboard metric widget from the local series, as the CloudWatch console answers it
 * with `GetMetricData`: metric rows (`[namespace, name, dimension, value, ..., {options}]`, `.`
 * repeating the row above) at their statistic, and expression rows — metric math over the other
 * rows' ids, `SEARCH(...)` (one line per metric found, or folded by `SUM`/`AVG`/`MIN`/`MAX`),
 * `PERIOD(...)` and Metrics Insights `SELECT`. Rows marked `visible: false` feed expressions only.
 * A row the local CloudWatch cannot answer becomes an error naming it; the others are still drawn.
 */
export function widgetData(properties: MetricWidgetProperties, series: MetricSeries, window: WidgetWindow): WidgetData {
  const { periodSeconds } = window;
  const startMs = periodStart(window.startMs, periodSeconds);
  const timeline: number[] = [];
  for (let t = startMs; t < window.endMs; t += periodSeconds * 1000) timeline.push(t);
  const queries = parseRows(properties.metrics ?? []);
  const values = new Map<string, Datapoints>();
  const lines: WidgetLine[] = [];
  const errors: string[] = [];
  const show = (query: Query, points: Datapoints, identity?: MetricIdentity) => {
    if (query.options.visible === false) return;
    const sorted = [...points].filter(([t]) => t >= startMs && t < window.endMs).sort(([a], [b]) => a - b);
    lines.push({ label: label(query.options.label ?? identity?.name ?? query.id, identity, sorted), yAxis: query.options.yAxis ?? 'left', points: sorted });
  };
  // Metric rows first: expressions may name any of them, above or below.
  const named = (query: Query, error: unknown) => `${query.options.label ?? query.id}: ${error instanceof Error ? error.message : String(error)}`;
  for (const query of queries) {
    if (!query.metric) continue;
    const stat = query.options.stat ?? properties.stat ?? 'Average';
    try {
      const points = series.stat({ metric: query.metric, stat, periodSeconds, startMs, endMs: window.endMs });
      values.set(query.id, points);
      show(query, points, query.metric);
    } catch (error) {
      // E.g. a statistic the local series cannot compute (a trimmed mean): that row only.
      errors.push(named(query, error));
    }
  }
  for (const query of queries) {
    const expression = query.options.expression;
    if (expression === undefined) continue;
    try {
      if (/^\s*SELECT\b/i.test(expression)) {
        const points = insights(series, expression, periodSeconds, startMs, window.endMs);
        values.set(query.id, points);
        show(query, points);
        continue;
      }
      const found = searchCalls(expression);
      const whole = found.length === 1 && expression.trim() === expression.slice(found[0]?.start, found[0]?.end).trim();
      if (whole && found[0]) {
        for (const identity of searchMetrics(series, found[0].call.query)) {
          show(query, series.stat({ metric: identity, stat: found[0].call.stat, periodSeconds, startMs, endMs: window.endMs }), identity);
        }
        continue;
      }
      const scope = new Map(values);
      const rewritten = foldSearches(expression, series, { startMs, endMs: window.endMs, periodSeconds }, scope);
      const points = evaluateExpression(rewritten, { series: scope, timeline, periodSeconds });
      values.set(query.id, points);
      show(query, points);
    } catch (error) {
      // One row the local CloudWatch cannot answer never blanks the widget, let alone the dashboard.
      errors.push(named(query, error));
    }
  }
  return { lines, errors };
}

/** The rows of `metrics`, each with its id (`m1`, `m2`, ... when it has none) and options. */
function parseRows(rows: readonly (readonly unknown[])[]): Query[] {
  let previous: readonly unknown[] = [];
  return rows.map((row, index) => {
    const last = row[row.length - 1];
    const options = (last !== null && typeof last === 'object' && !Array.isArray(last) ? last : {}) as Options;
    const id = options.id ?? `m${index + 1}`;
    const parts = options === last ? row.slice(0, -1) : row;
    if (options.expression !== undefined || parts.length === 0) return { id, options };
    const filled = parts.map((part, i) => (part === '.' ? previous[i] : part));
    previous = filled;
    const [namespace, name, ...pairs] = filled.map(String);
    const dimensions: Record<string, string> = {};
    for (let i = 0; i + 1 < pairs.length; i += 2) dimensions[pairs[i] as string] = pairs[i + 1] as string;
    return { id, options, metric: { namespace: namespace as string, name: name as string, dimensions } };
  });
}

const FOLDS: Record<string, (values: number[]) => number> = {
  SUM: (values) => values.reduce((a, b) => a + b, 0),
  AVG: (values) => values.reduce((a, b) => a + b, 0) / values.length,
  MIN: (values) => Math.min(...values),
  MAX: (values) => Math.max(...values),
};

/**
 * Replaces each `SUM(SEARCH(...))` (or AVG, MIN, MAX) with an id bound in `scope` to the fold of
 * every series the search found, period by period; what is left is plain metric math.
 */
function foldSearches(expression: string, series: MetricSeries, window: { startMs: number; endMs: number; periodSeconds: number }, scope: Map<string, Datapoints>): string {
  let rewritten = '';
  let at = 0;
  for (const [index, { start, end, call }] of searchCalls(expression).entries()) {
    const before = /(SUM|AVG|MIN|MAX)\s*\(\s*$/i.exec(expression.slice(at, start));
    const after = /^\s*\)/.exec(expression.slice(end));
    if (!before || !after) throw new UnsupportedExpressionError(`SEARCH inside an expression is evaluated locally only as SUM/AVG/MIN/MAX(SEARCH(...)): ${expression}`);
    const fold = FOLDS[(before[1] as string).toUpperCase()] as (values: number[]) => number;
    const byPeriod = new Map<number, number[]>();
    for (const identity of searchMetrics(series, call.query)) {
      for (const [t, value] of series.stat({ metric: identity, stat: call.stat, periodSeconds: window.periodSeconds, startMs: window.startMs, endMs: window.endMs })) {
        byPeriod.set(t, [...(byPeriod.get(t) ?? []), value]);
      }
    }
    const id = `search_${index}`;
    scope.set(id, new Map([...byPeriod].map(([t, values]) => [t, fold(values)])));
    rewritten += expression.slice(at, start - before[0].length) + id;
    at = end + after[0].length;
  }
  return rewritten + expression.slice(at);
}

/** Fills CloudWatch's label placeholders: `${PROP('Dim.x')}`, `${PROP('MetricName')}`, `${AVG}`, `${MAX}`, `${MIN}`, `${SUM}`, `${LAST}`. */
function label(template: string, identity: MetricIdentity | undefined, points: readonly (readonly [number, number])[]): string {
  const values = points.map(([, value]) => value);
  const round = (value: number) => String(Number(value.toFixed(2)));
  return template
    .replace(/\$\{PROP\('([^']+)'\)\}/g, (_, property: string) => {
      if (property === 'MetricName') return identity?.name ?? '';
      if (property === 'Namespace') return identity?.namespace ?? '';
      return property.startsWith('Dim.') ? identity?.dimensions[property.slice(4)] ?? '' : '';
    })
    .replace(/\$\{(AVG|MAX|MIN|SUM|LAST)\}/g, (_, stat: string) => {
      if (values.length === 0) return '-';
      return round(stat === 'LAST' ? values[values.length - 1] as number : (FOLDS[stat] as (v: number[]) => number)(values));
    });
}
