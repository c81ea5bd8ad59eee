import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { alarmDefinition, evaluateAlarm } from '../../local/cloudwatch/alarms.ts';
import { evaluateExpression, UnsupportedExpressionError } from '../../local/cloudwatch/metric-math.ts';
import { MetricSeries } from '../../local/cloudwatch/series.ts';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0); // a period boundary
const worker = { service: 'ballast-worker', workerVersion: 'v2' };

describe('local metric series', () => {
  it('answers a statistic per period for the exact dimension set, periods aligned to the epoch', () => {
    const series = new MetricSeries();
    for (const [offset, value] of [[1_000, 3], [30_000, 5], [MINUTE + 1, 100], [2 * MINUTE + 5, 7]] as const) {
      series.record({ namespace: 'Ballast', name: 'JobsProcessed', dimensions: worker }, value, T0 + offset);
    }
    series.record({ namespace: 'Ballast', name: 'JobsProcessed', dimensions: { service: 'ballast-worker' } }, 1_000, T0 + 2_000);
    const query = (stat: string) => [...series.stat({ metric: { namespace: 'Ballast', name: 'JobsProcessed', dimensions: worker }, stat, periodSeconds: 60, startMs: T0 + 10, endMs: T0 + 2 * MINUTE })];
    assert.deepEqual(query('Sum'), [[T0, 8], [T0 + MINUTE, 100]], 'the start aligns down; the end is exclusive; another dimension set is another series');
    assert.deepEqual(query('Maximum'), [[T0, 5], [T0 + MINUTE, 100]]);
    assert.deepEqual(query('SampleCount'), [[T0, 2], [T0 + MINUTE, 1]]);
    assert.deepEqual(query('p50'), [[T0, 3], [T0 + MINUTE, 100]]);
    assert.throws(() => query('Median'), /unknown statistic 'Median'/);
  });
});

describe('local metric math', () => {
  const timeline = [T0, T0 + MINUTE, T0 + 2 * MINUTE];
  const scope = {
    timeline,
    series: new Map([
      ['invocations', new Map([[T0, 20], [T0 + MINUTE, 4]])],
      ['errors', new Map([[T0, 3]])],
    ]),
  };

  it('evaluates the worker error-rate expression as CloudWatch does: FILL, IF, arithmetic, comparison', () => {
    const rate = evaluateExpression('IF(FILL(invocations, 0) >= 10, 100 * FILL(errors, 0) / FILL(invocations, 0), 0)', scope);
    assert.deepEqual([...rate], [[T0, 15], [T0 + MINUTE, 0], [T0 + 2 * MINUTE, 0]], 'a quiet minute counts as 0');
    assert.deepEqual([...evaluateExpression('errors / invocations', scope)], [[T0, 0.15]], 'two series keep the periods both have');
    assert.deepEqual([...evaluateExpression('100 * FILL(errors, 0) / FILL(errors, 0)', scope)], [[T0, 100]], 'a division by zero is no datapoint');
    assert.deepEqual([...evaluateExpression('-(2 + 3) * 2', scope)], timeline.map((t) => [t, -10]), 'a scalar applies to every period');
  });

  it('refuses what it does not evaluate, naming it', () => {
    assert.throws(() => evaluateExpression('ANOMALY_DETECTION_BAND(errors, 2)', scope), (e: unknown) => e instanceof UnsupportedExpressionError && /ANOMALY_DETECTION_BAND\(\) with 2/.test(e.message));
    assert.throws(() => evaluateExpression('errors +', scope), /ends too early/);
    assert.throws(() => evaluateExpression('nope * 2', scope), /no metric with id 'nope'/);
  });
});

describe('local alarms', () => {
  const alarm = (props: Record<string, unknown>) => alarmDefinition('A', {
    ComparisonOperator: 'GreaterThanOrEqualToThreshold', Threshold: 5, EvaluationPeriods: 3, DatapointsToAlarm: 2, TreatMissingData: 'notBreaching', ...props,
  });
  const errorRate = alarm({
    Metrics: [
      { Id: 'rate', Expression: 'IF(FILL(invocations, 0) >= 10, 100 * FILL(errors, 0) / FILL(invocations, 0), 0)', ReturnData: true },
      { Id: 'errors', MetricStat: { Metric: { Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: 'worker' }] }, Stat: 'Sum', Period: 60 }, ReturnData: false },
      { Id: 'invocations', MetricStat: { Metric: { Namespace: 'AWS/Lambda', MetricName: 'Invocations', Dimensions: [{ Name: 'FunctionName', Value: 'worker' }] }, Stat: 'Sum', Period: 60 }, ReturnData: false },
    ],
  });
  const lambda = (name: string, value: number, at: number, series: MetricSeries) =>
    series.record({ namespace: 'AWS/Lambda', name, dimensions: { FunctionName: 'worker' } }, value, at);

  it('goes to ALARM when 2 of the last 3 complete minutes breach, and back to OK when they stop', () => {
    const series = new MetricSeries();
    for (const minute of [0, 1, 2]) lambda('Invocations', 20, T0 + minute * MINUTE + 1, series);
    lambda('Errors', 2, T0 + 1, series); // 10 %
    lambda('Errors', 1, T0 + 2 * MINUTE + 1, series); // 5 %
    const alarmed = evaluateAlarm(errorRate, series, T0 + 3 * MINUTE + 30_000);
    assert.equal(alarmed.state, 'ALARM', alarmed.reason);
    assert.deepEqual(alarmed.datapoints, [10, 0, 5]);
    assert.match(alarmed.reason, /2 of the last 3 datapoints \[10, 0, 5\] GreaterThanOrEqualToThreshold 5 \(2 needed\)/);
    assert.equal(evaluateAlarm(errorRate, series, T0 + 5 * MINUTE).state, 'OK', 'only minute 2 is left in the window');
  });

  it('treats missing data as the alarm says', () => {
    const empty = new MetricSeries();
    const single = (treatMissingData: string) => alarm({ TreatMissingData: treatMissingData, Namespace: 'Ballast', MetricName: 'X', Statistic: 'Sum', Period: 60, Dimensions: [] });
    assert.equal(evaluateAlarm(single('notBreaching'), empty, T0).state, 'OK');
    assert.equal(evaluateAlarm(single('breaching'), empty, T0).state, 'ALARM');
    assert.equal(evaluateAlarm(single('missing'), empty, T0).state, 'INSUFFICIENT_DATA');
    assert.equal(evaluateAlarm(single('ignore'), empty, T0, 'ALARM').state, 'ALARM', 'ignore keeps the previous state');
  });

  it('evaluates a Metrics Insights alarm across every series of its schema, with its WHERE', () => {
    const series = new MetricSeries();
    for (const [version, value] of [['v1', 30], ['v2', 25]] as const) {
      series.record({ namespace: 'Ballast', name: 'CacheBreakerTransitions', dimensions: { ...worker, workerVersion: version, reason: 'open' } }, value, T0 + 1);
    }
    series.record({ namespace: 'Ballast', name: 'CacheBreakerTransitions', dimensions: { ...worker, reason: 'closed' } }, 99, T0 + 1);
    const opened = alarm({
      EvaluationPeriods: 1, DatapointsToAlarm: 1, Threshold: 50,
      Metrics: [{ Id: 'q', Expression: 'SELECT SUM(CacheBreakerTransitions) FROM SCHEMA("Ballast", reason, service, workerVersion) WHERE reason = \'open\'', Period: 300, ReturnData: true }],
    });
    const evaluation = evaluateAlarm(opened, series, T0 + 5 * MINUTE);
    assert.deepEqual([evaluation.state, evaluation.datapoints], ['ALARM', [55]], evaluation.reason);
  });

  it('reads every alarm of the shipped stack; an expression it cannot compute is INSUFFICIENT_DATA with the reason', () => {
    const template = JSON.parse(readFileSync(new URL('../infra/__snapshots__/ballast-local.template.json', import.meta.url), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    // Stand-ins for what the local cloud's intrinsics resolve (names of the functions, queues, tables).
    const resolved = (value: unknown): unknown => (Array.isArray(value) ? value.map(resolved)
      : value && typeof value === 'object' ? ('Ref' in value || 'Fn::GetAtt' in value ? 'resolved'
        : 'Fn::Join' in value ? ((value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1].map(resolved).join((value as { 'Fn::Join': [string] })['Fn::Join'][0]))
          : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolved(v)]))) : value);
    const alarms = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')
      .map(([id, r]) => alarmDefinition(id, resolved(r.Properties) as Record<string, unknown>));
    assert.ok(alarms.length >= 20, `${alarms.length} alarms`);
    const series = new MetricSeries();
    for (const definition of alarms) {
      const evaluation = evaluateAlarm(definition, series, T0);
      assert.ok(['OK', 'INSUFFICIENT_DATA'].includes(evaluation.state), `${definition.name}: ${evaluation.state} ${evaluation.reason}`);
      assert.doesNotMatch(evaluation.reason, /not evaluated locally/, `${definition.name}: ${evaluation.reason}`);
    }
    assert.ok(alarms.some((definition) => definition.name.endsWith('CodeFaults-Rollback')));
  });
});
