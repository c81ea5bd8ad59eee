import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MetricSeries, searchMetrics, widgetData, type WidgetData } from '../../local/cloudwatch/index.ts';

const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
const window = { startMs: T0, endMs: T0 + 30_000, periodSeconds: 10 };

/** Jobs processed by two worker versions over three 10 s periods, and a queue's sends. */
function series(): MetricSeries {
  const s = new MetricSeries();
  const jobs = (version: string, name = 'JobsProcessed') => ({ namespace: 'Ballast', name, dimensions: { service: 'ballast', workerVersion: version } });
  for (const [offset, v1, v2] of [[0, 4, 1], [10_000, 6, 2], [20_000, 2, 3]] as const) {
    s.record(jobs('1'), v1, T0 + offset + 1);
    s.record(jobs('2'), v2, T0 + offset + 2);
    s.record(jobs('1', 'DuplicatesSuppressed'), 1, T0 + offset + 3);
    s.record({ namespace: 'AWS/SQS', name: 'NumberOfMessagesSent', dimensions: { QueueName: 'jobs' } }, 20, T0 + offset + 4);
  }
  // Same name, another dimension set: a SEARCH on {Ballast,service,workerVersion} must not find it.
  s.record({ namespace: 'Ballast', name: 'JobsProcessed', dimensions: { service: 'ballast', workerVersion: '1', reason: 'x' } }, 100, T0 + 5);
  return s;
}

/** Each drawn line's values, by its label. */
const valuesByLabel = (data: WidgetData) => Object.fromEntries(data.lines.map((line) => [line.label, line.points.map(([, value]) => value)]));

describe('dashboard widgets answered from the local metrics (the console\'s GetMetricData)', () => {
  it('SEARCH finds the metrics of exactly the schema\'s dimensions that match every term', () => {
    const found = searchMetrics(series(), '{Ballast,service,workerVersion} (MetricName="JobsProcessed" OR MetricName="DuplicatesSuppressed") workerVersion="1"');
    assert.deepEqual(found.map((m) => `${m.name}/${m.dimensions.workerVersion}`).sort(), ['DuplicatesSuppressed/1', 'JobsProcessed/1']);
  });

  it('draws metric rows at their statistic, hides the ones marked invisible, and fills PERIOD() and ${AVG}-style labels', () => {
    const data = widgetData({
      metrics: [
        [{ expression: 'sent / PERIOD(sent)', label: 'Production TPS (max: ${MAX})' }],
        ['AWS/SQS', 'NumberOfMessagesSent', 'QueueName', 'jobs', { id: 'sent', visible: false, stat: 'Sum' }],
      ],
    }, series(), window);
    assert.deepEqual(data.errors, []);
    assert.equal(data.lines.length, 1);
    assert.deepEqual(data.lines[0]?.points.map(([, value]) => value), [2, 2, 2]);
    assert.equal(data.lines[0]?.label, 'Production TPS (max: 2)');
  });

  it('a SEARCH expression draws one line per metric found, labelled from its dimensions; SUM(SEARCH(...)) folds them', () => {
    const data = widgetData({
      metrics: [
        [{ expression: 'SEARCH(\'{Ballast,service,workerVersion} MetricName="JobsProcessed"\', \'Sum\', 60)', label: 'v${PROP(\'Dim.workerVersion\')}' }],
        [{ expression: 'SUM(SEARCH(\'{Ballast,service,workerVersion} MetricName="JobsProcessed"\', \'Sum\', 60))', label: 'all versions' }],
      ],
    }, series(), window);
    assert.deepEqual(data.errors, []);
    assert.deepEqual(valuesByLabel(data), { v1: [4, 6, 2], v2: [1, 2, 3], 'all versions': [5, 8, 5] });
  });

  it('answers Metrics Insights SELECT and repeats a row\'s fields written as "."', () => {
    const data = widgetData({
      metrics: [
        [{ expression: 'SELECT SUM(JobsProcessed) FROM SCHEMA("Ballast", service, workerVersion)', label: 'insights' }],
        ['Ballast', 'JobsProcessed', 'service', 'ballast', 'workerVersion', '2', { stat: 'Sum', label: 'v2' }],
        ['.', 'DuplicatesSuppressed', '.', '.', '.', '1', { stat: 'Sum', label: 'duplicates v1' }],
      ],
    }, series(), window);
    assert.deepEqual(valuesByLabel(data), { insights: [5, 8, 5], v2: [1, 2, 3], 'duplicates v1': [1, 1, 1] });
  });

  it('a query the local CloudWatch cannot answer is an error naming it; the rest of the widget is still drawn', () => {
    const data = widgetData({
      metrics: [
        [{ expression: 'ANOMALY_DETECTION_BAND(m1)', label: 'band' }],
        ['AWS/SQS', 'NumberOfMessagesSent', 'QueueName', 'jobs', { id: 'm1', stat: 'Sum' }],
        ['AWS/SQS', 'NumberOfMessagesSent', 'QueueName', 'jobs', { label: 'trimmed', stat: 'tm99' }],
      ],
    }, series(), window);
    assert.equal(data.lines.length, 1);
    assert.match(data.errors.join(), /band: .*ANOMALY_DETECTION_BAND/);
    assert.match(data.errors.join(), /trimmed: /);
  });
});
