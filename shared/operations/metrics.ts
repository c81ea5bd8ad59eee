import {
  DescribeAlarmHistoryCommand, DescribeAlarmsCommand, GetMetricDataCommand, ListMetricsCommand, type CloudWatchClient, type Dimension, type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';

/** What a metrics read answered: values, or why there are none (checks then say "unknown"). */
export type MetricsAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

export interface AlarmState {
  readonly name: string;
  readonly state: string;
  readonly reason: string;
}

/** What the alarms' actions (their notifications) did in a window, from their history. */
export interface AlarmNotifications {
  readonly sent: number;
  /** Each failed action: the alarm, and the history's summary (e.g. the topic policy's refusal). */
  readonly failed: readonly { readonly alarm: string; readonly summary: string }[];
}

/**
 * Reads ballast's metrics through the CloudWatch API — on AWS, and locally through the local
 * cloud's CloudWatch-compatible endpoint (`AWS_ENDPOINT_URL_CLOUDWATCH`): one code path.
 * Dimension sets are discovered with ListMetrics (Powertools writes `service` + `workerVersion`
 * (+ `reason`)), summed with GetMetricData and grouped by one dimension.
 */
export class MetricsReader {
  readonly #cloudwatch: CloudWatchClient | undefined;
  readonly #unavailable: string;

  constructor(cloudwatch: CloudWatchClient | undefined, unavailableWhy = 'this environment has no CloudWatch endpoint') {
    this.#cloudwatch = cloudwatch;
    this.#unavailable = unavailableWhy;
  }

  /** Sum of `name` over the last `windowMinutes`, grouped by the values of `groupBy`. */
  async sumBy(namespace: string, name: string, groupBy: string, windowMinutes: number): Promise<MetricsAnswer<Record<string, number>>> {
    return this.#guard(async (cloudwatch) => {
      const sets: Dimension[][] = [];
      let token: string | undefined;
      do {
        const page = await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace, MetricName: name, NextToken: token }));
        for (const metric of page.Metrics ?? []) {
          if ((metric.Dimensions ?? []).some((d) => d.Name === groupBy)) sets.push(metric.Dimensions ?? []);
        }
        token = page.NextToken;
      } while (token);
      const values = await this.#sums(cloudwatch, namespace, name, sets, windowMinutes, 'Sum');
      const grouped: Record<string, number> = {};
      sets.forEach((dimensions, index) => {
        const key = dimensions.find((d) => d.Name === groupBy)?.Value ?? '';
        grouped[key] = (grouped[key] ?? 0) + (values[index] ?? 0);
      });
      return grouped;
    });
  }

  /** The largest value of one metric (exact dimensions) over the window; undefined without data. */
  async maximum(namespace: string, name: string, dimensions: Dimension[], windowMinutes: number): Promise<MetricsAnswer<number | undefined>> {
    return this.#guard(async (cloudwatch) => {
      const [value] = await this.#sums(cloudwatch, namespace, name, [dimensions], windowMinutes, 'Maximum');
      return value;
    });
  }

  /** The sum of one metric (exact dimensions) over the window; undefined without data. */
  async sum(namespace: string, name: string, dimensions: Dimension[], windowMinutes: number): Promise<MetricsAnswer<number | undefined>> {
    return this.#guard(async (cloudwatch) => {
      const [value] = await this.#sums(cloudwatch, namespace, name, [dimensions], windowMinutes, 'Sum');
      return value;
    });
  }

  /** Alarms whose names start with `prefix`, with their states. */
  async alarms(prefix: string): Promise<MetricsAnswer<AlarmState[]>> {
    return this.#guard(async (cloudwatch) => {
      const alarms: AlarmState[] = [];
      let token: string | undefined;
      do {
        const page = await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNamePrefix: prefix, NextToken: token }));
        for (const alarm of [...(page.MetricAlarms ?? []), ...(page.CompositeAlarms ?? [])]) {
          alarms.push({ name: alarm.AlarmName ?? '', state: alarm.StateValue ?? 'UNKNOWN', reason: alarm.StateReason ?? '' });
        }
        token = page.NextToken;
      } while (token);
      return alarms;
    });
  }

  /**
   * The `Action` items of the alarms' history (names starting with `prefix`) in the window: a
   * notification its topic refused is recorded nowhere else, the alarm itself stays green.
   */
  async alarmNotifications(prefix: string, windowMinutes: number): Promise<MetricsAnswer<AlarmNotifications>> {
    return this.#guard(async (cloudwatch) => {
      const startMs = Date.now() - windowMinutes * 60_000;
      let sent = 0;
      const failed: { alarm: string; summary: string }[] = [];
      let token: string | undefined;
      do {
        const page = await cloudwatch.send(new DescribeAlarmHistoryCommand({ HistoryItemType: 'Action', StartDate: new Date(startMs), EndDate: new Date(), NextToken: token }));
        for (const item of page.AlarmHistoryItems ?? []) {
          if (!item.AlarmName?.startsWith(prefix) || (item.Timestamp && item.Timestamp.getTime() < startMs)) continue;
          if (/^Failed/i.test(item.HistorySummary ?? '')) failed.push({ alarm: item.AlarmName, summary: item.HistorySummary ?? '' });
          else sent += 1;
        }
        token = page.NextToken;
      } while (token);
      return { sent, failed };
    });
  }

  async #sums(cloudwatch: CloudWatchClient, namespace: string, name: string, sets: Dimension[][], windowMinutes: number, stat: string): Promise<(number | undefined)[]> {
    if (sets.length === 0) return [];
    const endMs = Date.now();
    const periodSeconds = Math.max(60, Math.ceil(windowMinutes) * 60);
    const results: (number | undefined)[] = [];
    for (let start = 0; start < sets.length; start += 500) {
      const queries: MetricDataQuery[] = sets.slice(start, start + 500).map((dimensions, index) => ({
        Id: `m${start + index}`,
        MetricStat: { Metric: { Namespace: namespace, MetricName: name, Dimensions: dimensions }, Period: periodSeconds, Stat: stat },
      }));
      const out = await cloudwatch.send(new GetMetricDataCommand({
        MetricDataQueries: queries, StartTime: new Date(endMs - periodSeconds * 1000), EndTime: new Date(endMs),
      }));
      const byId = new Map((out.MetricDataResults ?? []).map((r) => [r.Id, r.Values ?? []]));
      for (const query of queries) {
        const values = byId.get(query.Id) ?? [];
        results.push(values.length === 0 ? undefined : stat === 'Maximum' ? Math.max(...values) : values.reduce((a, b) => a + b, 0));
      }
    }
    return results;
  }

  async #guard<T>(read: (cloudwatch: CloudWatchClient) => Promise<T>): Promise<MetricsAnswer<T>> {
    if (!this.#cloudwatch) return { ok: false, why: this.#unavailable };
    try {
      return { ok: true, value: await read(this.#cloudwatch) };
    } catch (error) {
      return { ok: false, why: `CloudWatch: ${(error as Error).name}: ${(error as Error).message}` };
    }
  }
}

/** Sum of every group. */
export function total(groups: Record<string, number>): number {
  return Object.values(groups).reduce((sum, n) => sum + n, 0);
}
