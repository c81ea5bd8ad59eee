import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Duration, Stack, type CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { EnvironmentConfig } from '../../infra/config.ts';
import { duplicateRatePercent, searchByVersion } from '../../infra/constructs/observability/index.ts';
import { synthStack } from '../helpers/infra.ts';

type Resource = { Type: string; Properties: Record<string, any> };
type Synth = ReturnType<typeof synthStack>;

const logicalId = (stack: Stack, element: unknown): string => stack.resolve((element as CfnElement).logicalId) as string;

/** The dashboard body as one string: literal parts as they are, references as their JSON. */
function dashboardBody(template: Template): string {
  const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];
  assert.ok(dashboard, 'no dashboard in the template');
  const parts = dashboard.Properties.DashboardBody['Fn::Join'][1] as unknown[];
  return parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');
}

/** The CloudFormation properties of `alarm`, found by the reference its name resolves to. */
function alarmProps({ stack, template }: Synth, alarm: IAlarm): Record<string, any> {
  const name = stack.resolve(alarm.alarmName) as string | { Ref: string };
  const alarms = template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>;
  const found = typeof name === 'string'
    ? Object.values(alarms).find((resource) => resource.Properties.AlarmName === name)
    : alarms[name.Ref];
  assert.ok(found, `alarm ${JSON.stringify(name)} not in the template`);
  return found.Properties;
}

/** The environment's alarm whose name ends with `suffix` (facade naming: ballast-<env>-<friendly name>-<kind>-Critical). */
function alarmBySuffix(synth: Synth, suffix: string): { alarm: IAlarm; props: Record<string, any> } {
  for (const alarm of synth.stack.observability.alarms) {
    const props = alarmProps(synth, alarm);
    if (typeof props.AlarmName === 'string' && props.AlarmName.endsWith(suffix)) return { alarm, props };
  }
  assert.fail(`no alarm named *${suffix}`);
}

/** The single metric (namespace, name, dimensions, stat, period) an alarm watches. */
function watched(props: Record<string, any>) {
  const [query] = props.Metrics as Array<Record<string, any>>;
  const stat = query?.MetricStat;
  return { namespace: stat.Metric.Namespace, metricName: stat.Metric.MetricName, dimensions: stat.Metric.Dimensions, stat: stat.Stat, period: stat.Period };
}

/** Every metric (MetricStat) an alarm's queries read, by query id. */
function statsOf(props: Record<string, any>): Record<string, { Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] }; Stat: string; Period: number }> {
  return Object.fromEntries((props.Metrics as Array<Record<string, any>>).filter((query) => query.MetricStat).map((query) => [query.Id, query.MetricStat]));
}
/** The one expression (math or Metrics Insights) an alarm returns. */
function expressionOf(props: Record<string, any>): string {
  const returned = (props.Metrics as Array<Record<string, any>>).filter((query) => query.ReturnData !== false && query.Expression !== undefined);
  assert.equal(returned.length, 1, `${props.AlarmName}: one returned expression`);
  return joined(returned[0]!.Expression);
}
/** A deploy-time string as text: literal parts as they are, references as their JSON. */
function joined(value: unknown): string {
  if (typeof value === 'string') return value;
  const parts = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  return parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');
}
const dimensionsOf = (metric: { Dimensions: { Name: string; Value: unknown }[] }) => Object.fromEntries(metric.Dimensions.map((d) => [d.Name, d.Value]));

const dev = synthStack('dev');
const devTopic = { Ref: logicalId(dev.stack, dev.stack.observability.topic.node.defaultChild) };
const devConfig = (adjust: (alarms: EnvironmentConfig['alarms']) => EnvironmentConfig['alarms']) =>
  (config: EnvironmentConfig): EnvironmentConfig => ({ ...config, alarms: adjust(config.alarms) });

describe('BallastObservability: dashboard', () => {
  const body = dashboardBody(dev.template);

  it('one dashboard per environment, named ballast-<env>', () => {
    // GIVEN/WHEN dev and prod are synthesized
    // THEN
    dev.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    dev.template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'ballast-dev' });
    synthStack('prod').template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'ballast-prod' });
  });

  it('shows queue depth, oldest message age, receive vs delete rate and DLQ depth', () => {
    const { stack } = dev;
    const onQueue = (metric: string, queueName: string) => `"AWS/SQS","${metric}","QueueName","${JSON.stringify(stack.resolve(queueName))}"`;
    for (const metric of ['ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage', 'NumberOfMessagesReceived', 'NumberOfMessagesDeleted']) {
      assert.ok(body.includes(onQueue(metric, stack.jobs.queue.queueName)), `${metric} of the jobs queue`);
    }
    assert.ok(body.includes(onQueue('ApproximateNumberOfMessagesVisible', stack.jobs.deadLetterQueue.queueName)), 'DLQ depth');
    for (const title of ['Message Count', 'Oldest Message Age', 'Jobs queue: receives vs deletes (gap = redeliveries)', 'DLQ: Message Count']) {
      assert.ok(body.includes(`"title":"${title}"`), `widget "${title}"`);
    }
  });

  it('shows worker duration p99 per executed version against an annotation at the timeout', () => {
    // GIVEN dev's worker timeout of 30 s
    assert.match(body, /"title":"Worker duration p99 vs timeout"/);
    assert.match(body, /\{"value":30000,"label":"Timeout \(30 s\)"/);
    assert.match(body, /SEARCH\('\{AWS\/Lambda,ExecutedVersion,FunctionName,Resource\} FunctionName=\\".*?\\" MetricName=\\"Duration\\"', 'p99', 60\)/);
  });

  it('shows worker errors and throttles, and the invalidator stream iterator age', () => {
    for (const metric of ['Errors', 'Throttles', 'IteratorAge']) {
      assert.ok(body.includes(`"AWS/Lambda","${metric}"`), `${metric} graphed`);
    }
    assert.match(body, /"title":"Iterator"/);
  });

  it('splits the EMF metrics by worker version with SEARCH, and retries and dead letters by reason', () => {
    const byVersion = (metric: string) => new RegExp(`SEARCH\\('\\{Ballast,service,workerVersion\\} [^']*MetricName=\\\\"${metric}\\\\"`);
    for (const metric of ['DuplicatesSuppressed', 'JobsProcessed', 'LockContention', 'LockWaitMs', 'CommitsFenced', 'CommitConflicts', 'CacheHits', 'CacheMisses', 'InvalidationLagMs']) {
      assert.match(body, byVersion(metric), `${metric} split by version`);
    }
    for (const metric of ['JobsRetried', 'SentToDlq']) {
      assert.match(body, new RegExp(`SEARCH\\('\\{Ballast,reason,service,workerVersion\\} MetricName=\\\\"${metric}\\\\"', 'Sum', 60\\)`), `${metric} by reason`);
    }
    assert.match(body, /"label":"\$\{PROP\('Dim.reason'\)\} \(v\$\{PROP\('Dim.workerVersion'\)\}\)"/);
    assert.match(body, /"label":"\$\{PROP\('MetricName'\)\} v\$\{PROP\('Dim.workerVersion'\)\}"/);
  });

  it('shows duplicates suppressed, lock contention and wait, cache hit ratio and invalidation lag', () => {
    for (const title of ['Jobs processed and duplicates suppressed', 'Duplicate rate', 'Lock contention by version', 'Lock wait p99',
      'Commits retried in place after a transaction conflict (hot items)',
      'Cache hit ratio', 'Invalidation lag (commit to tombstone)', 'Jobs retried by reason', 'Jobs sent to the DLQ by reason',
      'Failed invalidations repaired (records re-applied; full-reconcile fallbacks by reason)']) {
      assert.ok(body.includes(`"title":"${title}"`), `widget "${title}"`);
    }
    assert.match(body, /100 \* SUM\(SEARCH\([^)]*CacheHits[^)]*\)\) \/ SUM\(SEARCH\([^)]*CacheHits[^)]*CacheMisses[^)]*CacheFallbacks/);
  });

  it('shows what Lambda\'s pollers did with each event source mapping\'s events, one widget per mapping', () => {
    // GIVEN dev's three mappings: the jobs queue, the state stream, the invalidator's failures
    const { stack, template } = dev;
    const mappings = template.findResources('AWS::Lambda::EventSourceMapping') as Record<string, Resource>;
    const mappingOf = (fn: { node: { defaultChild?: unknown } }) => {
      const fnRef = JSON.stringify({ Ref: logicalId(stack, fn.node.defaultChild) });
      const ids = Object.entries(mappings).filter(([, mapping]) => JSON.stringify(mapping.Properties.FunctionName) === fnRef).map(([id]) => id);
      assert.equal(ids.length, 1, `one mapping invokes ${fnRef}`);
      return { Ref: ids[0] };
    };
    const expected = [
      ['Jobs → worker', stack.resolve(stack.worker.eventSourceMappingId)],
      ['State stream → cache invalidator', mappingOf(stack.invalidator)],
      ['Failed invalidations → repair', mappingOf(stack.invalidationRepair)],
    ] as const;
    assert.equal(Object.keys(mappings).length, 3);
    // THEN each mapping publishes its event counts
    for (const [id, mapping] of Object.entries(mappings)) assert.deepEqual(mapping.Properties.MetricsConfig, { Metrics: ['EventCount'] }, id);
    // AND each has its widget with the six counts, on its own EventSourceMappingUUID
    for (const [name, ref] of expected) {
      const start = body.indexOf(`"title":"${name}: events per minute"`);
      assert.ok(start >= 0, `widget "${name}: events per minute"`);
      const widget = body.slice(start, body.indexOf('{"type":', start));
      for (const metric of ['PolledEventCount', 'InvokedEventCount', 'FailedInvokeEventCount', 'DeletedEventCount', 'DroppedEventCount', 'FilteredOutEventCount']) {
        assert.ok(widget.includes(`["AWS/Lambda","${metric}","EventSourceMappingUUID","${JSON.stringify(ref)}"`), `${name}: ${metric} of ${JSON.stringify(ref)}`);
      }
      assert.equal(widget.match(/"EventSourceMappingUUID"/g)?.length, 6, `${name}: its own mapping only`);
    }
  });

  it('lists every alarm in an alarm status widget', () => {
    const widget = body.slice(body.indexOf('"type":"alarm"'));
    assert.match(widget, /^"type":"alarm".*"title":"Alarms \(ballast-dev\)","alarms":\[/);
    for (const alarm of dev.stack.observability.alarms) {
      assert.ok(widget.includes(JSON.stringify(dev.stack.resolve(alarm.alarmArn))), `${alarm.node.path} listed`);
    }
  });
});

describe('BallastObservability: alarms', () => {
  it('every alarm notifies the topic on ALARM and OK, and says what to do first', () => {
    // GIVEN/WHEN dev is synthesized
    const { alarms } = dev.stack.observability;
    // THEN 25 alarms:
    //   jobs queue: oldest message age, DLQ not empty, new dead letters (3)
    //   worker (live alias): p99 duration, throttles; duplicate rate; lock contention (4)
    //   invalidator: iterator age, on-failure queue not empty, its DLQ not empty (3)
    //   cache: fallbacks, breaker opened, invalidations skipped, ElastiCache throttled commands (4)
    //   read API 5xx (1)
    //   tables: read and write throttles of each, system errors of each (6)
    //   the worker's own per-version errors and duration alarms, the code-faults rollback alarm (3)
    //   the alarm topic's failed deliveries (1)
    assert.equal(alarms.length, 25);
    assert.equal(new Set(alarms).size, 25, 'each listed once');
    dev.template.resourceCountIs('AWS::CloudWatch::Alarm', 25);
    const own = [dev.stack.worker.errorsAlarm, dev.stack.worker.durationAlarm];
    for (const alarm of own) assert.ok(alarms.includes(alarm), `${alarm.node.path} listed`);
    for (const alarm of alarms) {
      const props = alarmProps(dev, alarm);
      assert.deepEqual(props.AlarmActions, [devTopic], `${props.AlarmName} ALARM action`);
      assert.deepEqual(props.OKActions, [devTopic], `${props.AlarmName} OK action`);
      assert.ok(props.AlarmDescription, `${props.AlarmName} has a description`);
      assert.match(props.AlarmDescription, /First: .*`ballast [a-z ]+.*--env dev`/, props.AlarmName ?? alarm.node.path);
    }
  });

  it('code faults: the deployed version\'s records failing with unexpected errors ≥ 5 % of its records in 2 of 3 minutes, once it has 10 a minute', () => {
    const { props } = alarmBySuffix(dev, '-Worker-CodeFaults-Rollback');
    // THEN faults = dead-lettered + retried (reason unexpected); records = processed + duplicates + faults
    const faults = 'FILL(deadLettered, 0) + FILL(retried, 0)';
    const records = `FILL(processed, 0) + FILL(duplicates, 0) + ${faults}`;
    assert.equal(expressionOf(props), `IF(${records} >= 10, 100 * (${faults}) / (${records}), 0)`);
    const stats = statsOf(props);
    const version = { service: 'ballast-worker', workerVersion: 'test' };
    for (const [id, metricName, dimensions] of [
      ['deadLettered', 'SentToDlq', { ...version, reason: 'unexpected' }],
      ['retried', 'JobsRetried', { ...version, reason: 'unexpected' }],
      ['processed', 'JobsProcessed', version],
      ['duplicates', 'DuplicatesSuppressed', version],
    ] as const) {
      assert.equal(stats[id]?.Metric.Namespace, 'Ballast', id);
      assert.equal(stats[id]?.Metric.MetricName, metricName, id);
      assert.deepEqual(dimensionsOf(stats[id]!.Metric), dimensions, id);
      assert.equal(stats[id]?.Stat, 'Sum', id);
      assert.equal(stats[id]?.Period, 60, id);
    }
    assert.equal(Object.keys(stats).length, 4);
    assert.equal(props.Threshold, 5);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.EvaluationPeriods, 3);
    assert.equal(props.DatapointsToAlarm, 2);
    assert.equal(props.TreatMissingData, 'notBreaching');
  });

  it('DLQ not empty: visible messages in the jobs DLQ > 0', () => {
    const { props } = alarmBySuffix(dev, '-JobsQueue-DLQ-Queue-Message-Count-Max-Critical');
    assert.deepEqual(watched(props), {
      namespace: 'AWS/SQS', metricName: 'ApproximateNumberOfMessagesVisible', stat: 'Maximum', period: 60,
      dimensions: [{ Name: 'QueueName', Value: dev.stack.resolve(dev.stack.jobs.deadLetterQueue.queueName) }],
    });
    assert.equal(props.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(props.Threshold, 0);
    assert.match(props.AlarmDescription, /ballast dlq list --env dev/);
  });

  it('age of the oldest message ≥ alarms.oldestMessageAge (15 min in dev, 5 min in prod)', () => {
    for (const [env, seconds] of [['dev', 900], ['prod', 300]] as const) {
      const synth = env === 'dev' ? dev : synthStack(env);
      const { props } = alarmBySuffix(synth, '-JobsQueue-Queue-Message-Age-Max-Critical');
      assert.equal(watched(props).metricName, 'ApproximateAgeOfOldestMessage');
      assert.deepEqual(watched(props).dimensions, [{ Name: 'QueueName', Value: synth.stack.resolve(synth.stack.jobs.queue.queueName) }]);
      assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.equal(props.Threshold, seconds, env);
    }
  });

  it('worker errors and duration: the worker construct\'s own per-version alarms, with the topic added', () => {
    // GIVEN/WHEN dev is synthesized
    const errors = alarmProps(dev, dev.stack.worker.errorsAlarm);
    const duration = alarmProps(dev, dev.stack.worker.durationAlarm);
    // THEN the error rate of the executed version, and its p99 duration
    assert.match(expressionOf(errors), /^IF\(FILL\(invocations, 0\) >= 10, 100 \* FILL\(errors, 0\) \/ FILL\(invocations, 0\), 0\)$/);
    assert.deepEqual(Object.values(statsOf(errors)).map((stat) => stat.Metric.MetricName).sort(), ['Errors', 'Invocations']);
    assert.equal(duration.MetricName, 'Duration');
    assert.equal(duration.ExtendedStatistic, 'p99');
    for (const props of [errors, duration]) {
      const dimensions = props.Dimensions ?? Object.values(statsOf(props))[0]?.Metric.Dimensions;
      assert.ok(dimensions.some((d: { Name: string }) => d.Name === 'ExecutedVersion'), 'per executed version');
      assert.deepEqual(props.AlarmActions, [devTopic]);
      assert.deepEqual(props.OKActions, [devTopic]);
    }
  });

  it('throttles: worker throttles > 0 in 5 minutes', () => {
    const { props } = alarmBySuffix(dev, '-Worker-Throttled-Count-Critical');
    assert.equal(watched(props).metricName, 'Throttles');
    assert.equal(watched(props).period, 300);
    assert.equal(props.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(props.Threshold, 0);
  });

  it('p99 duration ≥ 80 % of the worker timeout, on the live alias', () => {
    const { props } = alarmBySuffix(dev, '-Worker-Latency-P99-Critical');
    const metric = watched(props);
    assert.equal(metric.metricName, 'Duration');
    assert.equal(metric.stat, 'p99');
    assert.ok(metric.dimensions.some((d: { Name: string }) => d.Name === 'Resource'), 'alias dimension');
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 24_000);
    // AND it covers every version behind the alias, so it only notifies: the rollback is the new version's own p99 alarm
    assert.match(props.AlarmDescription, /Covers every version behind the alias/);
    assert.doesNotMatch(props.AlarmDescription, /Rolls back a worker deployment/);
  });

  it('invalidator iterator age ≥ alarms.iteratorAge; its on-failure queue not empty', () => {
    const { stack, template } = dev;
    const iterator = alarmBySuffix(dev, '-Invalidator-Iterator-Age-Max-Critical').props;
    assert.equal(watched(iterator).metricName, 'IteratorAge');
    assert.deepEqual(watched(iterator).dimensions, [{ Name: 'FunctionName', Value: stack.resolve(stack.invalidator.functionName) }]);
    assert.equal(iterator.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(iterator.Threshold, 60_000);

    const [mapping] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping', {
      Properties: { DestinationConfig: Match.anyValue() },
    })) as Resource[];
    const failureQueueId = mapping?.Properties.DestinationConfig.OnFailure.Destination['Fn::GetAtt'][0];
    const failures = alarmBySuffix(dev, '-InvalidatorFailures-Queue-Message-Count-Max-Critical').props;
    assert.deepEqual(watched(failures).dimensions, [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [failureQueueId, 'QueueName'] } }]);
    assert.equal(failures.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(failures.Threshold, 0);
  });

  it('invalidation repair DLQ not empty: visible messages > 0, with the cache repair command to run first', () => {
    // GIVEN/WHEN
    const { stack } = dev;
    const { props } = alarmBySuffix(dev, '-InvalidatorFailures-DLQ-Queue-Message-Count-Max-Critical');
    // THEN
    assert.deepEqual(watched(props), {
      namespace: 'AWS/SQS', metricName: 'ApproximateNumberOfMessagesVisible', stat: 'Maximum', period: 60,
      dimensions: [{ Name: 'QueueName', Value: stack.resolve(stack.invalidatorFailures.deadLetterQueue.queueName) }],
    });
    assert.equal(props.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(props.Threshold, 0);
    assert.match(props.AlarmDescription, /`ballast cache check --repair --env dev`/);
  });

  it('lock contention: a Metrics Insights sum over every version, per 5 minutes', () => {
    const { props } = alarmBySuffix(dev, '-Locks-Contention-Critical');
    assert.equal(props.Metrics.length, 1);
    assert.equal(props.Metrics[0].Expression, 'SELECT SUM(LockContention) FROM SCHEMA("Ballast", service, workerVersion)');
    assert.equal(props.Metrics[0].Period, 300);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 50);
  });

  it('duplicate rate: DuplicatesSuppressed / (JobsProcessed + DuplicatesSuppressed) × 100 ≥ alarms.duplicateRatePercent', () => {
    const { props } = alarmBySuffix(dev, '-Jobs-DuplicateRate-Critical');
    const byId = Object.fromEntries((props.Metrics as Array<Record<string, any>>).map((query) => [query.Id, query]));
    assert.equal(byId.expr_1?.Expression, '100 * FILL(duplicates, 0) / (FILL(processed, 0) + FILL(duplicates, 0))');
    assert.equal(byId.duplicates?.MetricStat.Metric.MetricName, 'DuplicatesSuppressed');
    assert.equal(byId.processed?.MetricStat.Metric.MetricName, 'JobsProcessed');
    for (const query of [byId.duplicates, byId.processed]) {
      assert.equal(query?.MetricStat.Metric.Namespace, 'Ballast');
      assert.deepEqual(query?.MetricStat.Metric.Dimensions.map((d: { Name: string }) => d.Name), ['service', 'workerVersion']);
      assert.equal(query?.MetricStat.Stat, 'Sum');
      assert.equal(query?.MetricStat.Period, 300);
    }
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 20);
  });

  it('read API errors: 5xx answered at its function URL ≥ 5 per 5 minutes', () => {
    const { props } = alarmBySuffix(dev, '-ReadApi-ServerErrors-Critical');
    assert.deepEqual(watched(props), {
      namespace: 'AWS/Lambda', metricName: 'Url5xxCount', stat: 'Sum', period: 300,
      dimensions: [{ Name: 'FunctionName', Value: dev.stack.resolve(dev.stack.readApi.functionName) }],
    });
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 5);
  });

  it('cache fallbacks: reads answered from the table, a Metrics Insights sum over every version ≥ alarms.cacheFallbacksPer5Minutes per 5 minutes', () => {
    const { props } = alarmBySuffix(dev, '-Cache-Fallbacks-Critical');
    assert.equal(props.Metrics.length, 1);
    assert.equal(expressionOf(props), 'SELECT SUM(CacheFallbacks) FROM SCHEMA("Ballast", service, workerVersion)');
    assert.equal(props.Metrics[0].Period, 300);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 100);
    assert.equal(props.TreatMissingData, 'notBreaching');
    assert.match(props.AlarmDescription, /^100 or more cache reads in 5 minutes .*First: `ballast doctor --env dev`/);
  });

  it('breaker opened: any transition to open, by reason, over every version', () => {
    const { props } = alarmBySuffix(dev, '-Cache-BreakerOpened-Critical');
    assert.equal(expressionOf(props), "SELECT SUM(CacheBreakerTransitions) FROM SCHEMA(\"Ballast\", reason, service, workerVersion) WHERE reason = 'open'");
    assert.equal(props.Metrics[0].Period, 300);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 1);
    assert.equal(props.TreatMissingData, 'notBreaching');
    assert.match(props.AlarmDescription, /circuit breaker opened.*First: `ballast doctor --env dev`/);
  });

  it('invalidations skipped: any stream record the invalidator could not read, whatever the reason', () => {
    const { props } = alarmBySuffix(dev, '-Cache-InvalidationsSkipped-Critical');
    assert.equal(expressionOf(props), 'SELECT SUM(CacheInvalidationsSkipped) FROM SCHEMA("Ballast", reason, service, workerVersion)');
    assert.equal(props.Metrics[0].Period, 300);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 1);
    assert.match(props.AlarmDescription, /First: `ballast cache check --repair --env dev`/);
  });

  it('ElastiCache throttled commands ≥ alarms.cacheThrottledCommandsPer5Minutes, on the serverless cache\'s clusterId', () => {
    // GIVEN dev's serverless cache, and its name (its Ref, or the name it is given)
    const caches = Object.entries(dev.template.findResources('AWS::ElastiCache::ServerlessCache')) as Array<[string, Resource]>;
    assert.equal(caches.length, 1);
    const [cacheId, cache] = caches[0]!;
    const cacheName = cache.Properties.ServerlessCacheName ?? { Ref: cacheId };
    const { props } = alarmBySuffix(dev, '-Cache-ThrottledCommands-Critical');
    // THEN serverless caches publish under clusterId (CacheClusterId is node-based clusters')
    assert.deepEqual(Object.values(statsOf(props)), [{
      Metric: { Namespace: 'AWS/ElastiCache', MetricName: 'ThrottledCmds', Dimensions: [{ Name: 'clusterId', Value: cacheName }] },
      Stat: 'Sum',
      Period: 300,
    }]);
    assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(props.Threshold, 10);
    assert.equal(props.TreatMissingData, 'notBreaching');
    assert.match(props.AlarmDescription, /^ElastiCache throttled 10 or more commands in 5 minutes.*First: `ballast doctor --env dev`/);
  });

  it('DynamoDB throttles: read and write throttle events of each table ≥ alarms.dynamoDbThrottlesPer5Minutes per 5 minutes', () => {
    const { stack } = dev;
    for (const [name, table] of [['StateTable', stack.tables.state], ['ControlTable', stack.tables.control]] as const) {
      for (const [kind, metricName] of [['Read', 'ReadThrottleEvents'], ['Write', 'WriteThrottleEvents']] as const) {
        const { props } = alarmBySuffix(dev, `-${name}-${kind}-Throttled-Events-Critical`);
        const stats = Object.values(statsOf(props));
        assert.deepEqual(stats.map((stat) => [stat.Metric.Namespace, stat.Metric.MetricName, stat.Metric.Dimensions, stat.Stat, stat.Period]),
          [['AWS/DynamoDB', metricName, [{ Name: 'TableName', Value: stack.resolve(table.tableName) }], 'Sum', 300]], `${name} ${kind}`);
        assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold', `${name} ${kind}`);
        assert.equal(props.Threshold, 10, `${name} ${kind}`);
        assert.equal(props.TreatMissingData, 'notBreaching', `${name} ${kind}`);
        assert.match(props.AlarmDescription, new RegExp(`^DynamoDB throttled 10 or more ${name} requests in 5 minutes.*First: \`ballast doctor --env dev\``), `${name} ${kind}`);
      }
    }
  });

  it('DynamoDB system errors: a Metrics Insights sum over every operation of each table ≥ alarms.dynamoDbSystemErrorsPer5Minutes', () => {
    const { stack } = dev;
    for (const [name, table] of [['StateTable', stack.tables.state], ['ControlTable', stack.tables.control]] as const) {
      const { props } = alarmBySuffix(dev, `-Tables-${name}SystemErrors-Critical`);
      // THEN every operation, transactions and stream reads included, not a list of them
      assert.equal(props.Metrics.length, 1, name);
      assert.equal(expressionOf(props),
        `SELECT SUM(SystemErrors) FROM SCHEMA("AWS/DynamoDB", Operation, TableName) WHERE TableName = '${JSON.stringify(stack.resolve(table.tableName))}'`, name);
      assert.equal(props.Metrics[0].Period, 300, name);
      assert.equal(props.ComparisonOperator, 'GreaterThanOrEqualToThreshold', name);
      assert.equal(props.Threshold, 5, name);
      assert.equal(props.TreatMissingData, 'notBreaching', name);
      assert.match(props.AlarmDescription, new RegExp(`^DynamoDB answered 5 or more ${name} requests in 5 minutes with an internal error.*First: \`ballast doctor --env dev\``), name);
    }
  });

  it('the cache and DynamoDB alarms follow the environment config', () => {
    // GIVEN a config with other thresholds
    const synth = synthStack('dev', devConfig((alarms) => ({
      ...alarms, cacheFallbacksPer5Minutes: 250, cacheThrottledCommandsPer5Minutes: 3, dynamoDbThrottlesPer5Minutes: 7, dynamoDbSystemErrorsPer5Minutes: 2,
    })));
    // THEN
    const fallbacks = alarmBySuffix(synth, '-Cache-Fallbacks-Critical').props;
    assert.equal(fallbacks.Threshold, 250);
    assert.match(fallbacks.AlarmDescription, /^250 or more cache reads/);
    const throttled = alarmBySuffix(synth, '-Cache-ThrottledCommands-Critical').props;
    assert.equal(throttled.Threshold, 3);
    assert.match(throttled.AlarmDescription, /throttled 3 or more commands/);
    for (const suffix of ['-StateTable-Read-Throttled-Events-Critical', '-ControlTable-Write-Throttled-Events-Critical']) {
      const props = alarmBySuffix(synth, suffix).props;
      assert.equal(props.Threshold, 7, suffix);
      assert.match(props.AlarmDescription, /throttled 7 or more/, suffix);
    }
    for (const suffix of ['-Tables-StateTableSystemErrors-Critical', '-Tables-ControlTableSystemErrors-Critical']) {
      const props = alarmBySuffix(synth, suffix).props;
      assert.equal(props.Threshold, 2, suffix);
      assert.match(props.AlarmDescription, /answered 2 or more/, suffix);
    }
  });

  it('the duplicate-rate and contention alarms follow the environment config', () => {
    // GIVEN a config with other thresholds
    const synth = synthStack('dev', devConfig((alarms) => ({ ...alarms, duplicateRatePercent: 7, lockContentionPer5Minutes: 12 })));
    // THEN
    const duplicates = alarmBySuffix(synth, '-Jobs-DuplicateRate-Critical').props;
    const contention = alarmBySuffix(synth, '-Locks-Contention-Critical').props;
    assert.equal(duplicates.Threshold, 7);
    assert.match(duplicates.AlarmDescription, /reached 7 %/);
    assert.equal(contention.Threshold, 12);
    assert.match(contention.AlarmDescription, /^12 or more claim attempts in 5 minutes met a lock/);
  });

  it('refuses alarm thresholds that cannot work, naming the field', () => {
    const refuse = (adjust: (alarms: EnvironmentConfig['alarms']) => EnvironmentConfig['alarms'], message: RegExp) =>
      assert.throws(() => synthStack('dev', devConfig(adjust)), message);
    refuse((alarms) => ({ ...alarms, duplicateRatePercent: 0 }), /alarms\.duplicateRatePercent 0 is outside \(0, 100\]/);
    refuse((alarms) => ({ ...alarms, duplicateRatePercent: 120 }), /alarms\.duplicateRatePercent 120 is outside/);
    refuse((alarms) => ({ ...alarms, lockContentionPer5Minutes: 0 }), /alarms\.lockContentionPer5Minutes 0 is not a whole number of at least 1/);
    for (const field of ['cacheFallbacksPer5Minutes', 'cacheThrottledCommandsPer5Minutes', 'dynamoDbThrottlesPer5Minutes', 'dynamoDbSystemErrorsPer5Minutes'] as const) {
      refuse((alarms) => ({ ...alarms, [field]: 0 }), new RegExp(`alarms\\.${field} 0 is not a whole number of at least 1`));
      refuse((alarms) => ({ ...alarms, [field]: 2.5 }), new RegExp(`alarms\\.${field} 2\\.5 is not a whole number of at least 1`));
    }
    refuse((alarms) => ({ ...alarms, oldestMessageAge: Duration.days(4) }), /alarms\.oldestMessageAge \(345600 s\) is not below the jobs queue's retention/);
  });
});

describe('BallastObservability: topic and rollbacks', () => {
  it('subscribes alarms.email to the topic only when it is set', () => {
    // GIVEN/WHEN dev without an email
    dev.template.resourceCountIs('AWS::SNS::Subscription', 0);
    // GIVEN/WHEN an email is configured
    const synth = synthStack('dev', devConfig((alarms) => ({ ...alarms, email: 'oncall@example.com' })));
    // THEN
    synth.template.resourceCountIs('AWS::SNS::Subscription', 1);
    synth.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: { Ref: logicalId(synth.stack, synth.stack.observability.topic.node.defaultChild) },
    });
  });

  it('lets CloudWatch publish to the topic, for this account\'s alarms only: its TLS-only policy replaces the default one, which would have allowed it', () => {
    // GIVEN/WHEN dev is synthesized
    const topic = { Ref: logicalId(dev.stack, dev.stack.observability.topic.node.defaultChild) };
    const [policy] = Object.values(dev.template.findResources('AWS::SNS::TopicPolicy'))
      .filter((resource) => JSON.stringify(resource.Properties.Topics) === JSON.stringify([topic]));
    const statements = policy!.Properties.PolicyDocument.Statement as { Effect: string; Principal?: { Service?: string }; Action: string | string[]; Condition?: Record<string, Record<string, unknown>> }[];
    // THEN the service principal is allowed to publish, on behalf of this account's alarms
    const publish = statements.filter((statement) => statement.Effect === 'Allow' && statement.Principal?.Service === 'cloudwatch.amazonaws.com');
    assert.equal(publish.length, 1, 'one Allow for cloudwatch.amazonaws.com');
    assert.deepEqual([publish[0]!.Action].flat(), ['sns:Publish']);
    assert.deepEqual(publish[0]!.Condition?.StringEquals, { 'aws:SourceAccount': '123456789012' });
    assert.deepEqual(publish[0]!.Condition?.ArnLike, { 'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:eu-west-1:123456789012:alarm:*']] } });
    // AND the TLS deny stays
    assert.ok(statements.some((statement) => statement.Effect === 'Deny' && JSON.stringify(statement.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } })));
  });

  it('alarms when the topic fails to deliver a notification (the one alarm about the alarms), and notifies through it', () => {
    // GIVEN/WHEN dev is synthesized
    const topic = { Ref: logicalId(dev.stack, dev.stack.observability.topic.node.defaultChild) };
    const [alarm] = Object.values(dev.template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'NumberOfNotificationsFailed' } }));
    // THEN it watches the alarm topic's failed deliveries, any in 5 minutes
    assert.ok(alarm, 'an alarm on NumberOfNotificationsFailed');
    assert.equal(alarm.Properties.Namespace, 'AWS/SNS');
    assert.deepEqual(alarm.Properties.Dimensions, [{ Name: 'TopicName', Value: { 'Fn::GetAtt': [topic.Ref, 'TopicName'] } }]);
    assert.equal(alarm.Properties.Threshold, 1);
    assert.equal(alarm.Properties.Period, 300);
    assert.deepEqual(alarm.Properties.AlarmActions, [topic]);
    assert.match(alarm.Properties.AlarmDescription, /ballast status --env dev/);
  });

  it('DLQ not empty does not claim to roll anything back; new dead letters notify again on every arrival', () => {
    // GIVEN/WHEN dev is synthesized
    const size = alarmBySuffix(dev, '-JobsQueue-DLQ-Queue-Message-Count-Max-Critical').props;
    const incoming = alarmBySuffix(dev, '-JobsQueue-DLQ-Queue-Incoming-Messages-Count-Max-Critical').props;
    // THEN the size alarm tells the truth about itself
    assert.doesNotMatch(size.AlarmDescription, /[Rr]olls? back/);
    // AND the incoming alarm counts the messages sent to the DLQ per 5 minutes: back to OK between bursts, ALARM (and a notification) on each
    assert.deepEqual(watched(incoming), {
      namespace: 'AWS/SQS', metricName: 'NumberOfMessagesSent', stat: 'Sum', period: 300,
      dimensions: [{ Name: 'QueueName', Value: dev.stack.resolve(dev.stack.jobs.deadLetterQueue.queueName) }],
    });
    assert.equal(incoming.ComparisonOperator, 'GreaterThanThreshold');
    assert.equal(incoming.Threshold, 0);
    assert.equal(incoming.TreatMissingData, 'notBreaching');
    assert.match(incoming.AlarmDescription, /Does not roll a deployment back/);
  });

  it('the worker deployment group rolls back on the new version\'s own errors, p99 and code faults — not on dead letters, which bad input also causes', () => {
    // GIVEN/WHEN dev is synthesized
    const ref = (alarm: IAlarm) => JSON.stringify({ Name: dev.stack.resolve(alarm.alarmName) });
    const [group] = Object.values(dev.template.findResources('AWS::CodeDeploy::DeploymentGroup')) as Resource[];
    const listed = (group?.Properties.AlarmConfiguration.Alarms as unknown[]).map((entry) => JSON.stringify(entry));
    // THEN exactly the alarms that judge the deployed version alone
    assert.equal(group?.Properties.AlarmConfiguration.Enabled, true);
    assert.deepEqual(listed.sort(), [
      dev.stack.worker.errorsAlarm,
      dev.stack.worker.durationAlarm,
      alarmBySuffix(dev, '-Worker-CodeFaults-Rollback').alarm,
    ].map(ref).sort(), 'a business rejection or a DLQ awaiting replay must not roll a deployment back');
    // AND not the alias-wide p99 (the old version's share of traffic is in it), nor any DLQ alarm
    for (const suffix of ['-Worker-Latency-P99-Critical', '-JobsQueue-DLQ-Queue-Message-Count-Max-Critical', '-JobsQueue-DLQ-Queue-Incoming-Messages-Count-Max-Critical']) {
      assert.ok(!listed.includes(ref(alarmBySuffix(dev, suffix).alarm)), `${suffix} does not roll back`);
    }
    // AND the alias waits for every rollback alarm: each follows the version being deployed, so it
    // is updated before that version's traffic shifts
    const logicalIdOf = (construct: IConstruct) => dev.stack.resolve((construct.node.defaultChild as CfnElement).logicalId) as string;
    const alias = dev.template.findResources('AWS::Lambda::Alias')[logicalIdOf(dev.stack.worker.alias)] as Resource & { DependsOn?: string[] };
    for (const alarm of [dev.stack.worker.errorsAlarm, dev.stack.worker.durationAlarm, alarmBySuffix(dev, '-Worker-CodeFaults-Rollback').alarm]) {
      assert.ok(alias?.DependsOn?.includes(logicalIdOf(alarm)), `the alias depends on ${alarm.node.path}`);
    }
  });
});

describe('observability metrics', () => {
  it('the duplicate-rate alarm metric names the version and service it watches', () => {
    const config = duplicateRatePercent({ service: 'ballast-worker', workerVersion: '1.4.0' }, Duration.minutes(5)).toMetricConfig();
    const dimensions = Object.values(config.mathExpression?.usingMetrics ?? {}).map((metric) => metric.toMetricConfig().metricStat?.dimensions);
    assert.deepEqual(dimensions, [
      [{ name: 'service', value: 'ballast-worker' }, { name: 'workerVersion', value: '1.4.0' }],
      [{ name: 'service', value: 'ballast-worker' }, { name: 'workerVersion', value: '1.4.0' }],
    ]);
  });

  it('a search over several metrics matches any of them, exactly', () => {
    assert.equal(searchByVersion(['CacheHits', 'CacheMisses'], { statistic: 'p99' }).expression,
      `SEARCH('{Ballast,service,workerVersion} (MetricName="CacheHits" OR MetricName="CacheMisses")', 'p99', 60)`);
  });
});
