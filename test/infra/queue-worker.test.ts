import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { App, Duration, RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Alarm, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaDeploymentConfig } from 'aws-cdk-lib/aws-codedeploy';
import { Vpc } from 'aws-cdk-lib/aws-ec2';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { VPC_NETWORK_INTERFACE_ACTIONS } from '../../infra/constructs/ballast-function.ts';
import { QueueWorker, type QueueWorkerProps } from '../../infra/constructs/queue-worker.ts';
import { ReliableQueue } from '../../infra/constructs/reliable-queue.ts';
import { functionVersion } from '../helpers/infra.ts';

// Construct-level tests build their own stack: they must not load (or break with) the whole ballast stack.
const testStack = () => new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test', { env: { account: '123456789012', region: 'eu-west-1' } });
const logicalId = (element: unknown): string => {
  const cfn = element as CfnElement;
  return Stack.of(cfn).resolve(cfn.logicalId) as string; // after synthesis: includes overrides such as a version's hash
};

/** A 30 s worker with a 2 s window on a queue built for it, plus whatever `props` change. */
function build(props: Partial<QueueWorkerProps> = {}, queueTimeout = Duration.seconds(30)) {
  const stack = testStack();
  const queue = new ReliableQueue(stack, 'Jobs', { consumerTimeout: queueTimeout, maxBatchingWindow: Duration.seconds(2) });
  const worker = new QueueWorker(stack, 'Worker', {
    functionName: 'worker', queue, workerVersion: 'v1', maxBatchingWindow: Duration.seconds(2), batchSize: 7, maxConcurrency: 3, ...props,
  });
  const template = Template.fromStack(stack);
  const ids = {
    fn: logicalId(worker.function.node.defaultChild),
    version: logicalId(worker.function.currentVersion.node.defaultChild),
    alias: logicalId(worker.alias.node.defaultChild),
    hook: logicalId(worker.preTrafficCheck.node.defaultChild),
    hookRole: logicalId(worker.preTrafficCheck.executionRole.node.defaultChild),
    workerRole: logicalId(worker.function.executionRole.node.defaultChild),
    errorsAlarm: logicalId(worker.errorsAlarm.node.defaultChild),
    durationAlarm: logicalId(worker.durationAlarm.node.defaultChild),
    group: logicalId(worker.deploymentGroup.node.defaultChild),
    queue: logicalId(queue.queue.node.defaultChild),
    deadLetter: logicalId(queue.deadLetterQueue.node.defaultChild),
  };
  return { stack, worker, template, ids };
}

/** Every statement of the IAM policies attached to the role with logical id `roleId`. */
function statementsOf(template: Template, roleId: string): Array<{ Action: string | string[]; Resource: unknown }> {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}
const actionsOf = (statement: { Action: string | string[] }) => [statement.Action].flat();

type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };
/** The template resource with logical id `id`. */
const resourceOf = (template: Template, id: string) => (template.toJSON().Resources as Record<string, Resource>)[id]!;
/** The dimensions of a metric as { name: value }, easier to compare than CloudFormation's list. */
const dimensionsOf = (metric: { Dimensions: { Name: string; Value: unknown }[] }) => Object.fromEntries(metric.Dimensions.map((d) => [d.Name, d.Value]));
/** The dimensions of Lambda's metrics for the version the alias executed: the new version's own numbers. */
const ofDeployedVersion = (ids: { fn: string; version: string }) => ({
  FunctionName: { Ref: ids.fn },
  Resource: { 'Fn::Join': ['', [{ Ref: ids.fn }, ':live']] },
  ExecutedVersion: { 'Fn::GetAtt': [ids.version, 'Version'] },
});

describe('QueueWorker', () => {
  it('runs the worker on Node.js 24, arm64, traced, JSON logs, source maps enabled', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    // THEN
    template.hasResource('AWS::Lambda::Function', {
      Properties: Match.objectLike({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        Timeout: 30,
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: Match.objectLike({ LogFormat: 'JSON' }),
        Environment: {
          Variables: Match.objectLike({
            NODE_OPTIONS: '--enable-source-maps',
            WORKER_VERSION: 'v1',
            MAX_RECEIVE_COUNT: '5',
            DEAD_LETTER_QUEUE_URL: { Ref: ids.deadLetter },
          }),
        },
      }),
    });
    const functions = template.findResources('AWS::Lambda::Function');
    assert.ok(functions[ids.fn], 'the worker function is the one checked above');
    for (const fn of Object.values(functions)) {
      assert.equal(fn.Properties.Runtime, 'nodejs24.x');
      assert.deepEqual(fn.Properties.Architectures, ['arm64']);
    }
  });

  it('publishes a `live` alias on the current version and maps the queue to the alias only', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    // THEN
    template.hasResourceProperties('AWS::Lambda::Alias', {
      Name: 'live',
      FunctionName: { Ref: ids.fn },
      FunctionVersion: { 'Fn::GetAtt': [ids.version, 'Version'] },
    });
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [ids.queue, 'Arn'] },
      FunctionName: { 'Fn::Join': ['', [{ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: ids.alias }] }] }, ':live']] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 7,
      MaximumBatchingWindowInSeconds: 2,
      ScalingConfig: { MaximumConcurrency: 3 },
      // Lambda's per-mapping event counts (polled, invoked, failed, deleted, dropped, filtered out) for the dashboard
      MetricsConfig: { Metrics: ['EventCount'] },
      ProvisionedPollerConfig: Match.absent(),
    });
  });

  it('exposes the mapping\'s id, the EventSourceMappingUUID of its metrics', () => {
    // GIVEN/WHEN
    const { stack, worker, template } = build();
    // THEN
    const [mappingId] = Object.keys(template.findResources('AWS::Lambda::EventSourceMapping'));
    assert.deepEqual(stack.resolve(worker.eventSourceMappingId), { Ref: mappingId });
  });

  it('leaves the batching window off when it is zero', () => {
    // GIVEN/WHEN
    const { template } = build({ maxBatchingWindow: Duration.seconds(0) });
    // THEN
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { MaximumBatchingWindowInSeconds: Match.absent() });
  });

  it('lets the worker consume its queue, send to it (a record still waiting for a lock goes back as a new message) and dead-letter into its DLQ', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    const statements = statementsOf(template, ids.workerRole);
    // THEN
    const on = (queueId: string) => statements.filter((s) => JSON.stringify(s.Resource) === JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] })).flatMap(actionsOf);
    assert.ok(on(ids.queue).includes('sqs:DeleteMessage') && on(ids.queue).includes('sqs:ChangeMessageVisibility'));
    assert.ok(on(ids.deadLetter).includes('sqs:SendMessage'));
    assert.ok(on(ids.queue).includes('sqs:SendMessage'), 'lock waits are requeued onto the source queue');
  });

  it('deploys through CodeDeploy on the alias, rolling back on its own alarms and the extra ones, with a pre-traffic hook', () => {
    // GIVEN an extra rollback alarm
    const stack = testStack();
    const queue = new ReliableQueue(stack, 'Jobs', { consumerTimeout: Duration.seconds(30) });
    const latency = new Alarm(stack, 'Latency', { metric: new Metric({ namespace: 'Ballast', metricName: 'LockWaitMs' }), threshold: 1, evaluationPeriods: 1 });
    // WHEN
    const worker = new QueueWorker(stack, 'Worker', { functionName: 'worker', queue, workerVersion: 'v1', rollbackAlarms: [latency] });
    const template = Template.fromStack(stack);
    // THEN the new version's error rate and p99, then the extra alarm, roll it back
    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
      DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      AutoRollbackConfiguration: { Enabled: true, Events: Match.arrayWith(['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM']) },
      AlarmConfiguration: {
        Enabled: true,
        Alarms: [
          { Name: { Ref: logicalId(worker.errorsAlarm.node.defaultChild) } },
          { Name: { Ref: logicalId(worker.durationAlarm.node.defaultChild) } },
          { Name: { Ref: logicalId(latency.node.defaultChild) } },
        ],
      },
    });
    template.hasResource('AWS::Lambda::Alias', {
      UpdatePolicy: {
        CodeDeployLambdaAliasUpdate: Match.objectLike({
          DeploymentGroupName: { Ref: logicalId(worker.deploymentGroup.node.defaultChild) },
          BeforeAllowTrafficHook: { Ref: logicalId(worker.preTrafficCheck.node.defaultChild) },
        }),
      },
    });
  });

  it('rolls back on the new version\'s error rate: failed / invocations of the executed version ≥ 5 % in 2 of 3 minutes, once it has 10 a minute', () => {
    // GIVEN/WHEN the default canary
    const { template, ids } = build();
    const alarm = resourceOf(template, ids.errorsAlarm).Properties;
    // THEN a rate, not a count: a minute under the invocation floor counts as 0
    const byId = Object.fromEntries((alarm.Metrics as Array<Record<string, any>>).map((query) => [query.Id, query]));
    const [expression] = (alarm.Metrics as Array<Record<string, any>>).filter((query) => query.Expression);
    assert.equal(expression?.Expression, 'IF(FILL(invocations, 0) >= 10, 100 * FILL(errors, 0) / FILL(invocations, 0), 0)');
    assert.equal(expression?.ReturnData, true);
    for (const [id, metricName] of [['errors', 'Errors'], ['invocations', 'Invocations']] as const) {
      const stat = byId[id]?.MetricStat;
      assert.equal(stat?.Metric.Namespace, 'AWS/Lambda', id);
      assert.equal(stat?.Metric.MetricName, metricName, id);
      assert.equal(stat?.Stat, 'Sum', id);
      assert.equal(stat?.Period, 60, id);
      // AND of the deployed version only, whatever the old one does with the rest of the traffic
      assert.deepEqual(dimensionsOf(stat.Metric), ofDeployedVersion(ids), `${id}: FunctionName, the live alias and the executed version`);
    }
    assert.equal(alarm.Threshold, 5);
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(alarm.EvaluationPeriods, 3);
    assert.equal(alarm.DatapointsToAlarm, 2);
    assert.equal(alarm.TreatMissingData, 'notBreaching');
  });

  it('takes the error rate and the invocation floor from canary', () => {
    // GIVEN/WHEN a stricter canary
    const { template, ids } = build({ canary: { errorRatePercent: 2, minInvocationsPerMinute: 50 } });
    const alarm = resourceOf(template, ids.errorsAlarm).Properties;
    // THEN
    assert.equal(alarm.Threshold, 2);
    assert.match((alarm.Metrics as Array<{ Expression?: string }>).find((query) => query.Expression)?.Expression ?? '', /^IF\(FILL\(invocations, 0\) >= 50, /);
    assert.match(alarm.AlarmDescription, /fails 2 % or more .*fewer than 50 invocations/);
  });

  it('rolls back on the new version\'s p99 duration ≥ 80 % of the timeout in 2 of 3 minutes', () => {
    // GIVEN/WHEN a 30 s worker, and a 60 s one
    for (const [seconds, thresholdMs] of [[30, 24_000], [60, 48_000]] as const) {
      const { template, ids } = build({ timeout: Duration.seconds(seconds) }, Duration.seconds(seconds));
      const alarm = resourceOf(template, ids.durationAlarm).Properties;
      // THEN
      assert.equal(alarm.Namespace, 'AWS/Lambda');
      assert.equal(alarm.MetricName, 'Duration');
      assert.equal(alarm.ExtendedStatistic, 'p99');
      assert.equal(alarm.Period, 60);
      assert.deepEqual(dimensionsOf({ Dimensions: alarm.Dimensions }), ofDeployedVersion(ids), 'the executed version behind the live alias');
      assert.equal(alarm.Threshold, thresholdMs, `${seconds} s timeout`);
      assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.equal(alarm.EvaluationPeriods, 3);
      assert.equal(alarm.DatapointsToAlarm, 2);
      assert.equal(alarm.TreatMissingData, 'notBreaching');
    }
  });

  it('updates both per-version alarms before the alias moves traffic to the new version', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    // THEN the alias waits for the alarms that name the new version, so a canary is never judged on the old one
    const alias = resourceOf(template, ids.alias);
    assert.ok(alias.DependsOn?.includes(ids.errorsAlarm), `alias DependsOn ${ids.errorsAlarm}`);
    assert.ok(alias.DependsOn?.includes(ids.durationAlarm), `alias DependsOn ${ids.durationAlarm}`);
  });

  it('uses the deployment config it is given', () => {
    // GIVEN/WHEN
    const { template } = build({ deploymentConfig: LambdaDeploymentConfig.ALL_AT_ONCE });
    // THEN
    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', { DeploymentConfigName: 'CodeDeployDefault.LambdaAllAtOnce' });
  });

  it('lets the pre-traffic hook invoke the new version, and nothing else, and report its verdict', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    // THEN the hook knows the version to probe
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ TARGET_VERSION_ARN: { Ref: ids.version } }) },
    });
    const statements = statementsOf(template, ids.hookRole);
    const invokes = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('lambda:')));
    assert.deepEqual(invokes.map((s) => [actionsOf(s), s.Resource]), [[['lambda:InvokeFunction'], { Ref: ids.version }]]);
    const reports = statements.filter((s) => actionsOf(s).includes('codedeploy:PutLifecycleEventHookExecutionStatus'));
    assert.equal(reports.length, 1);
    assert.match(JSON.stringify(reports[0]!.Resource), new RegExp(`deploymentgroup:.*${ids.group}`));
  });

  it('gives every log group (worker and hooks) the retention and removal policy it is given', () => {
    // GIVEN/WHEN without and with a post-traffic hook
    for (const [canary, count] of [[{}, 2], [{ minRecords: 5 }, 3]] as const) {
      const { template } = build({ logRetention: RetentionDays.THREE_MONTHS, logRemovalPolicy: RemovalPolicy.RETAIN, canary });
      // THEN
      const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
      assert.equal(groups.length, count, JSON.stringify(canary));
      for (const group of groups) {
        assert.equal(group.Properties.RetentionInDays, 90);
        assert.equal(group.DeletionPolicy, 'Retain');
      }
    }
  });

  it('refuses a queue whose visibility timeout is too short for the worker', () => {
    // GIVEN a queue built for a 10 s consumer WHEN a 30 s worker consumes it THEN refused
    assert.throws(
      () => build({}, Duration.seconds(10)),
      /Test\/Worker: the queue's visibility timeout \(62 s\) is below 6 × timeout \(30 s\) \+ batching window \(2 s\) = 182 s/,
    );
  });

  it('refuses a maximum concurrency outside 2–1000', () => {
    // WHEN/THEN
    assert.throws(() => build({ maxConcurrency: 1 }), /maxConcurrency 1 is outside 2–1000/);
    assert.throws(() => build({ maxConcurrency: 1001 }), /maxConcurrency 1001 is outside 2–1000/);
  });
});

describe('QueueWorker: provisioned pollers', () => {
  const pollers = (minimum: number, maximum: number): Partial<QueueWorkerProps> => ({ maxConcurrency: undefined, provisionedPollers: { minimum, maximum } });

  it('puts the mapping in provisioned mode, with no concurrency cap', () => {
    // GIVEN/WHEN
    const { template } = build(pollers(4, 40));
    // THEN
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ProvisionedPollerConfig: { MinimumPollers: 4, MaximumPollers: 40 },
      ScalingConfig: Match.absent(),
      MetricsConfig: { Metrics: ['EventCount'] },
    });
  });

  it('refuses provisioned pollers together with maxConcurrency, naming both and what to remove', () => {
    // WHEN/THEN
    assert.throws(
      () => build({ maxConcurrency: 3, provisionedPollers: { minimum: 2, maximum: 10 } }),
      (error: Error) => error.name === 'BallastConfigError'
        && /^Test\/Worker: maxConcurrency \(3\) and provisionedPollers cannot be combined/.test(error.message)
        && /remove maxConcurrency/.test(error.message),
    );
  });

  it('refuses pollers outside Lambda\'s ranges: minimum 2–200, maximum from the minimum to 2,000', () => {
    // WHEN/THEN
    assert.throws(() => build(pollers(1, 10)), /provisionedPollers\.minimum 1 is outside 2–200/);
    assert.throws(() => build(pollers(201, 300)), /provisionedPollers\.minimum 201 is outside 2–200/);
    assert.throws(() => build(pollers(2.5, 10)), /provisionedPollers\.minimum 2\.5 is outside 2–200/);
    assert.throws(() => build(pollers(10, 9)), /provisionedPollers\.maximum 9 must be a whole number from minimum \(10\) to 2,000/);
    assert.throws(() => build(pollers(10, 2001)), /provisionedPollers\.maximum 2001 must be a whole number/);
    // AND the edges are accepted
    assert.doesNotThrow(() => build(pollers(2, 2)));
    assert.doesNotThrow(() => build(pollers(200, 2000)));
  });
});

describe('QueueWorker: post-traffic check', () => {
  // (functions/post-traffic-check/index.ts is the hook's entry; bundling is skipped here, so only its path matters.)
  const withHook = (props: Partial<QueueWorkerProps> = {}) => {
    const built = build({ canary: { minRecords: 25, settleTime: Duration.minutes(5) }, ...props });
    assert.ok(built.worker.postTrafficCheck, 'a post-traffic check with canary.minRecords > 0');
    const hook = built.worker.postTrafficCheck;
    return { ...built, hookIds: { fn: logicalId(hook.node.defaultChild), role: logicalId(hook.executionRole.node.defaultChild) } };
  };

  it('runs after all traffic has shifted: the deployment group\'s AfterAllowTraffic hook', () => {
    // GIVEN/WHEN
    const { template, ids, hookIds } = withHook();
    // THEN
    template.hasResource('AWS::Lambda::Alias', {
      UpdatePolicy: {
        CodeDeployLambdaAliasUpdate: Match.objectLike({
          DeploymentGroupName: { Ref: ids.group },
          BeforeAllowTrafficHook: { Ref: ids.hook },
          AfterAllowTrafficHook: { Ref: hookIds.fn },
        }),
      },
    });
  });

  it('counts the deployed worker version\'s records: its version, service, the minimum and the settle time in its environment', () => {
    // GIVEN/WHEN
    const { template, hookIds } = withHook();
    const fn = resourceOf(template, hookIds.fn).Properties;
    // THEN it judges the worker's version (v1), not its own code version (its WORKER_VERSION)
    assert.equal(fn.Environment.Variables.TARGET_WORKER_VERSION, 'v1');
    assert.notEqual(fn.Environment.Variables.WORKER_VERSION, 'v1');
    assert.equal(fn.Environment.Variables.TARGET_SERVICE_NAME, 'ballast-worker');
    assert.equal(fn.Environment.Variables.MIN_RECORDS, '25');
    assert.equal(fn.Environment.Variables.SETTLE_SECONDS, '300');
    // AND it may run the whole settle time plus a minute for the reads and the verdict
    assert.equal(fn.Timeout, 360);
    assert.equal(fn.Runtime, 'nodejs24.x');
  });

  it('names the worker\'s service when the worker sets POWERTOOLS_SERVICE_NAME', () => {
    // GIVEN/WHEN
    const { template, hookIds } = withHook({ environment: { POWERTOOLS_SERVICE_NAME: 'billing-worker' } });
    // THEN
    assert.equal(resourceOf(template, hookIds.fn).Properties.Environment.Variables.TARGET_SERVICE_NAME, 'billing-worker');
  });

  it('may read metrics (GetMetricData has no resource level), read and report on its own deployment group, and nothing else', () => {
    // GIVEN/WHEN
    const { template, worker, ids, hookIds } = withHook();
    const statements = statementsOf(template, hookIds.role).filter((s) => !actionsOf(s).some((a) => a.startsWith('logs:') || a.startsWith('xray:')));
    // THEN one statement per grant
    const deploymentGroupArn = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':codedeploy:eu-west-1:123456789012:deploymentgroup:',
      { Ref: logicalId(worker.deploymentGroup.application.node.defaultChild) }, '/', { Ref: ids.group }]] };
    assert.deepEqual(statements.map((s) => [actionsOf(s), s.Resource]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))), [
      [['cloudwatch:GetMetricData'], '*'],
      [['codedeploy:GetDeployment'], deploymentGroupArn],
      [['codedeploy:PutLifecycleEventHookExecutionStatus'], deploymentGroupArn],
    ]);
  });

  it('is left out with canary.minRecords 0, the default: promotion rests on the pre-traffic check alone', () => {
    for (const canary of [undefined, { minRecords: 0 }]) {
      // GIVEN/WHEN
      const { worker, template } = build({ canary });
      // THEN
      assert.ok(!worker.postTrafficCheck, 'no post-traffic check'); // (not assert.equal: a construct in a failure message takes minutes to print)
      template.hasResource('AWS::Lambda::Alias', {
        UpdatePolicy: { CodeDeployLambdaAliasUpdate: Match.objectLike({ AfterAllowTrafficHook: Match.absent() }) },
      });
      template.resourceCountIs('AWS::Lambda::Function', 2);
      const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) => policy.Properties.PolicyDocument.Statement);
      assert.deepEqual(statements.flatMap(actionsOf).filter((a: string) => a === 'cloudwatch:GetMetricData' || a === 'codedeploy:GetDeployment'), []);
    }
  });

  it('refuses canary values that cannot judge a version', () => {
    // WHEN/THEN the error rate is a share in (0, 100]
    assert.throws(() => build({ canary: { errorRatePercent: 0 } }), /Test\/Worker: canary\.errorRatePercent 0 is outside \(0, 100\]/);
    assert.throws(() => build({ canary: { errorRatePercent: 100.5 } }), /canary\.errorRatePercent 100\.5 is outside \(0, 100\]/);
    assert.throws(() => build({ canary: { errorRatePercent: -1 } }), /canary\.errorRatePercent -1 is outside/);
    assert.doesNotThrow(() => build({ canary: { errorRatePercent: 100 } }));
    // AND the invocations that make a minute count are a whole number ≥ 1 (0 would divide 0 by 0), the records ≥ 0
    assert.throws(() => build({ canary: { minInvocationsPerMinute: 0 } }), /canary\.minInvocationsPerMinute 0 must be a whole number ≥ 1/);
    assert.throws(() => build({ canary: { minInvocationsPerMinute: 2.5 } }), /canary\.minInvocationsPerMinute 2\.5 must be a whole number ≥ 1/);
    assert.doesNotThrow(() => build({ canary: { minInvocationsPerMinute: 1 } }));
    assert.throws(() => build({ canary: { minRecords: -1 } }), /canary\.minRecords -1 must be a whole number ≥ 0/);
    assert.throws(() => build({ canary: { minRecords: 0.5 } }), /canary\.minRecords 0\.5 must be a whole number ≥ 0/);
    // AND the settle time is 1–14 minutes (the hook's timeout adds one, and Lambda stops at 15)
    assert.throws(() => build({ canary: { minRecords: 5, settleTime: Duration.seconds(59) } }), /canary\.settleTime \(59 s\) must be 1–14 minutes/);
    assert.throws(() => build({ canary: { minRecords: 5, settleTime: Duration.minutes(15) } }), /canary\.settleTime \(900 s\) must be 1–14 minutes/);
    assert.doesNotThrow(() => build({ canary: { minRecords: 5, settleTime: Duration.minutes(1) } }));
    const longest = withHook({ canary: { minRecords: 5, settleTime: Duration.minutes(14) } });
    assert.equal(resourceOf(longest.template, longest.hookIds.fn).Properties.Timeout, 900, 'the longest settle time fits Lambda\'s 15 minutes');
  });
});

describe('QueueWorker: the functions it builds', () => {
  it('stamps the worker with its workerVersion and each hook with its own code version', () => {
    // GIVEN/WHEN
    const { template, ids, worker } = build({ canary: { minRecords: 5 } });
    const variables = (id: string) => resourceOf(template, id).Properties.Environment.Variables;
    // THEN
    assert.equal(variables(ids.fn).WORKER_VERSION, 'v1');
    assert.equal(variables(ids.hook).WORKER_VERSION, functionVersion('pre-traffic-check'));
    assert.equal(variables(logicalId(worker.postTrafficCheck!.node.defaultChild)).WORKER_VERSION, functionVersion('post-traffic-check'));
    assert.notEqual(functionVersion('pre-traffic-check'), functionVersion('post-traffic-check'), 'two different bundles, two versions');
  });

  it('in a VPC, gives the worker\'s role the ENI actions on "*" instead of AWSLambdaVPCAccessExecutionRole; the hooks outside it get none', () => {
    // GIVEN a VPC
    const stack = testStack();
    const vpc = new Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 1 });
    const queue = new ReliableQueue(stack, 'Jobs', { consumerTimeout: Duration.seconds(30) });
    // WHEN
    const worker = new QueueWorker(stack, 'Worker', { functionName: 'worker', queue, workerVersion: 'v1', vpc, canary: { minRecords: 5 } });
    const template = Template.fromStack(stack);
    // THEN no managed policy on any function role, the VPC access one included
    for (const fn of [worker.function, worker.preTrafficCheck, worker.postTrafficCheck!]) {
      const roleId = logicalId(fn.executionRole.node.defaultChild);
      assert.equal(resourceOf(template, roleId).Properties.ManagedPolicyArns, undefined, `${roleId} has no managed policy`);
    }
    // AND exactly the ENI actions (the EC2 half of AWSLambdaVPCAccessExecutionRole), in one statement, for the function in the VPC only
    assert.deepEqual([...VPC_NETWORK_INTERFACE_ACTIONS].sort(), [
      'ec2:AssignPrivateIpAddresses', 'ec2:CreateNetworkInterface', 'ec2:DeleteNetworkInterface', 'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSubnets', 'ec2:UnassignPrivateIpAddresses',
    ]);
    const eniStatements = (fn: typeof worker.function) => statementsOf(template, logicalId(fn.executionRole.node.defaultChild))
      .filter((s) => actionsOf(s).some((a) => a.startsWith('ec2:')));
    assert.deepEqual(eniStatements(worker.function).map((s) => [actionsOf(s).sort(), s.Resource]), [[[...VPC_NETWORK_INTERFACE_ACTIONS].sort(), '*']]);
    assert.deepEqual(eniStatements(worker.preTrafficCheck), []);
    assert.deepEqual(eniStatements(worker.postTrafficCheck!), []);
    // AND none of them may touch logs beyond its own group
    const logs = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>)
      .filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
    assert.ok(logs.every((s) => JSON.stringify(s.Resource) !== '"*"'), 'no logs action on "*"');
  });
});
