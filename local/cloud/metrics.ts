import { MetricSeries } from '../cloudwatch/series.ts';

/** One metric value read from an EMF document, with the document's dimensions. */
export interface MetricPoint {
  readonly name: string;
  readonly value: number;
  readonly dimensions: Readonly<Record<string, string>>;
}

/**
 * The local cloud's stand-in for CloudWatch metrics: it reads the Embedded Metric Format lines
 * functions write to their logs (exactly what CloudWatch extracts on AWS) and keeps totals and
 * samples, for the live progress display, the demo summary and the CLI, and every datapoint with
 * its namespace and timestamp in {@link series}, which the local alarms evaluate.
 */
export class MetricsCollector {
  /** Every datapoint as a time series (namespace, name, dimensions, timestamp). */
  readonly series = new MetricSeries();
  /** What stamps datapoints in {@link series}: real time, or a rehearsal's scaled time (`metricClock`). */
  readonly clock: () => number;
  readonly #scaled: boolean;

  constructor(options: { clock?: () => number } = {}) {
    this.clock = options.clock ?? Date.now;
    this.#scaled = options.clock !== undefined && options.clock !== Date.now;
  }
  readonly #totals = new Map<string, number>();
  readonly #samples = new Map<string, number[]>();
  static readonly MAX_SAMPLES = 50_000;

  /** Feeds one log line; lines that are not EMF are ignored. Returns the points it held. */
  ingest(line: string): MetricPoint[] {
    if (!line.includes('"_aws"')) return [];
    let document: Record<string, unknown>;
    try {
      document = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return [];
    }
    const aws = document._aws as { Timestamp?: number; CloudWatchMetrics?: { Namespace?: string; Dimensions?: string[][]; Metrics?: { Name: string }[] }[] } | undefined;
    const directives = aws?.CloudWatchMetrics ?? [];
    // A scaled clock stamps on arrival: the function's own timestamp is real time.
    const timestampMs = !this.#scaled && typeof aws?.Timestamp === 'number' ? aws.Timestamp : this.clock();
    const points: MetricPoint[] = [];
    for (const directive of directives) {
      const dimensionNames = [...new Set((directive.Dimensions ?? []).flat())];
      const dimensions = Object.fromEntries(dimensionNames.map((name) => [name, String(document[name])]));
      // CloudWatch stores one series per dimension set of the directive.
      const sets = (directive.Dimensions ?? [[]]).map((set) => Object.fromEntries(set.map((name) => [name, String(document[name])])));
      for (const { Name } of directive.Metrics ?? []) {
        const raw = document[Name];
        for (const value of Array.isArray(raw) ? raw : [raw]) {
          if (typeof value !== 'number') continue;
          points.push({ name: Name, value, dimensions });
          for (const set of sets) this.series.record({ namespace: directive.Namespace ?? 'aws-embedded-metrics', name: Name, dimensions: set }, value, timestampMs);
        }
      }
    }
    for (const point of points) this.#record(point);
    return points;
  }

  /** Sum of a metric, optionally for one `reason` (or any other dimension). */
  total(name: string, dimension?: { name: string; value: string }): number {
    return this.#totals.get(key(name, dimension)) ?? 0;
  }

  /** Every value of `dimension` seen for `name`, with its total (e.g. DLQ sends by reason). */
  breakdown(name: string, dimension: string): Record<string, number> {
    const prefix = `${name}|${dimension}=`;
    return Object.fromEntries([...this.#totals].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]));
  }

  /** The p-th percentile (0–100) of a metric's recorded values, or undefined with none. */
  percentile(name: string, p: number): number | undefined {
    const values = [...(this.#samples.get(name) ?? [])].sort((a, b) => a - b);
    if (values.length === 0) return undefined;
    return values[Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))];
  }

  #record(point: MetricPoint): void {
    this.#add(key(point.name), point.value);
    for (const [name, value] of Object.entries(point.dimensions)) this.#add(key(point.name, { name, value }), point.value);
    const samples = this.#samples.get(point.name) ?? [];
    if (samples.length < MetricsCollector.MAX_SAMPLES) samples.push(point.value);
    this.#samples.set(point.name, samples);
  }

  #add(k: string, value: number): void {
    this.#totals.set(k, (this.#totals.get(k) ?? 0) + value);
  }
}

function key(name: string, dimension?: { name: string; value: string }): string {
  return dimension ? `${name}|${dimension.name}=${dimension.value}` : name;
}
