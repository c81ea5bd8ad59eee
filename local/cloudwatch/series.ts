/** A metric as CloudWatch names it: namespace, name and the exact set of dimensions. */
export interface MetricIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

/** Datapoints of one query: the start (epoch ms) of each period that has data → its value. */
export type Datapoints = ReadonlyMap<number, number>;

/** One statistic over one period, as an alarm or `GetMetricData` asks for it. */
export interface StatQuery {
  readonly metric: MetricIdentity;
  /** `Sum`, `Average`, `Minimum`, `Maximum`, `SampleCount` or a percentile such as `p99` or `p99.9`. */
  readonly stat: string;
  readonly periodSeconds: number;
  /** Epoch ms, inclusive; both ends are aligned down to the period, as CloudWatch aligns them. */
  readonly startMs: number;
  /** Epoch ms, exclusive. */
  readonly endMs: number;
}

interface Series {
  readonly identity: MetricIdentity;
  /** [epoch ms, value], in arrival order. */
  readonly points: [number, number][];
}

/**
 * The local cloud's metric time series: every datapoint the functions emit (EMF) or the local
 * cloud measures, with its namespace, dimensions and timestamp, so alarms and `GetMetricData` can
 * ask for a statistic per period the way CloudWatch answers them. Each series keeps its most
 * recent `maxPointsPerSeries` points.
 */
export class MetricSeries {
  readonly #series = new Map<string, Series>();
  readonly #maxPoints: number;

  constructor(options: { maxPointsPerSeries?: number } = {}) {
    this.#maxPoints = options.maxPointsPerSeries ?? 200_000;
  }

  record(identity: MetricIdentity, value: number, timestampMs: number): void {
    if (!Number.isFinite(value) || !Number.isFinite(timestampMs)) return;
    const id = seriesKey(identity);
    let series = this.#series.get(id);
    if (!series) this.#series.set(id, (series = { identity: { ...identity, dimensions: { ...identity.dimensions } }, points: [] }));
    series.points.push([timestampMs, value]);
    if (series.points.length > this.#maxPoints) series.points.splice(0, series.points.length - this.#maxPoints);
  }

  /** Every series of `namespace` and `name`, whatever its dimensions. */
  identities(namespace: string, name: string): MetricIdentity[] {
    return [...this.#series.values()].filter((s) => s.identity.namespace === namespace && s.identity.name === name).map((s) => s.identity);
  }

  /** Every series of `namespace`, whatever its name and dimensions (what a dashboard's `SEARCH` looks through). */
  identitiesIn(namespace: string): MetricIdentity[] {
    return [...this.#series.values()].filter((s) => s.identity.namespace === namespace).map((s) => s.identity);
  }

  /** Every value of the series whose dimensions are exactly `identity.dimensions`, in arrival order (e.g. for one statistic over a whole run). */
  values(identity: MetricIdentity): number[] {
    return (this.#series.get(seriesKey(identity))?.points ?? []).map(([, value]) => value);
  }

  /** One statistic per period of the series whose dimensions are exactly `query.metric.dimensions`. */
  stat(query: StatQuery): Datapoints {
    const series = this.#series.get(seriesKey(query.metric));
    return aggregate(series ? [series.points] : [], query.stat, query.periodSeconds, query.startMs, query.endMs);
  }

  /**
   * A statistic per period over every series of `namespace`/`name` whose dimension names are
   * exactly `dimensionNames` and that match `where` (Metrics Insights' `FROM SCHEMA(...) WHERE`).
   */
  statAcross(namespace: string, name: string, dimensionNames: readonly string[], where: Readonly<Record<string, string>>, window: Omit<StatQuery, 'metric'>): Datapoints {
    const wanted = [...dimensionNames].sort().join('\u0000');
    const matching = [...this.#series.values()].filter(({ identity }) => identity.namespace === namespace && identity.name === name
      && Object.keys(identity.dimensions).sort().join('\u0000') === wanted
      && Object.entries(where).every(([dimension, value]) => identity.dimensions[dimension] === value));
    return aggregate(matching.map((s) => s.points), window.stat, window.periodSeconds, window.startMs, window.endMs);
  }
}

/** The period (epoch ms) a timestamp falls in. */
export function periodStart(timestampMs: number, periodSeconds: number): number {
  const periodMs = periodSeconds * 1000;
  return Math.floor(timestampMs / periodMs) * periodMs;
}

function aggregate(pointLists: readonly (readonly [number, number][])[], stat: string, periodSeconds: number, startMs: number, endMs: number): Datapoints {
  if (!(periodSeconds > 0)) throw new RangeError(`period must be > 0 seconds, got ${periodSeconds}`);
  const from = periodStart(startMs, periodSeconds);
  const buckets = new Map<number, number[]>();
  for (const points of pointLists) {
    for (const [timestampMs, value] of points) {
      if (timestampMs < from || timestampMs >= endMs) continue;
      const bucket = periodStart(timestampMs, periodSeconds);
      const values = buckets.get(bucket);
      if (values) values.push(value);
      else buckets.set(bucket, [value]);
    }
  }
  const compute = statistic(stat);
  return new Map([...buckets].sort(([a], [b]) => a - b).map(([bucket, values]) => [bucket, compute(values)]));
}

/** The function of a statistic's name; refuses names CloudWatch would refuse. */
export function statistic(stat: string): (values: readonly number[]) => number {
  switch (stat) {
    case 'Sum': return (values) => values.reduce((a, b) => a + b, 0);
    case 'Average': return (values) => values.reduce((a, b) => a + b, 0) / values.length;
    case 'Minimum': return (values) => Math.min(...values);
    case 'Maximum': return (values) => Math.max(...values);
    case 'SampleCount': return (values) => values.length;
    default: {
      const match = /^p(\d{1,2}(?:\.\d+)?|100)$/.exec(stat);
      if (!match) throw new RangeError(`unknown statistic '${stat}': use Sum, Average, Minimum, Maximum, SampleCount or pNN`);
      const p = Number(match[1]);
      return (values) => {
        const sorted = [...values].sort((a, b) => a - b);
        return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
      };
    }
  }
}

function seriesKey(identity: MetricIdentity): string {
  const dimensions = Object.entries(identity.dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join(',');
  return `${identity.namespace}|${identity.name}|${dimensions}`;
}
