import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { App, Duration, RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Alarm, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaDeploymentConfig } from 'aws-cdk-lib/aws-codedeploy';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { QueueWorker, type QueueWorkerProps } from '../../infra/constructs/queue-worker.ts';
import { ReliableQueue } from '../../infra/constructs/reliable-queue.ts';

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
    });
  });

  it('leaves the batching window off when it is zero', () => {
    // GIVEN/WHEN
    const { template } = build({ maxBatchingWindow: Duration.seconds(0) });
    // THEN
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { MaximumBatchingWindowInSeconds: Match.absent() });
  });

  it('lets the worker consume its queue and dead-letter into its DLQ', () => {
    // GIVEN/WHEN
    const { template, ids } = build();
    const statements = statementsOf(template, ids.workerRole);
    // THEN
    const on = (queueId: string) => statements.filter((s) => JSON.stringify(s.Resource) === JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] })).flatMap(actionsOf);
    assert.ok(on(ids.queue).includes('sqs:DeleteMessage') && on(ids.queue).includes('sqs:ChangeMessageVisibility'));
    assert.ok(on(ids.deadLetter).includes('sqs:SendMessage'));
    assert.ok(!on(ids.queue).includes('sqs:SendMessage'), 'the worker does not produce onto its own queue');
  });

  it('deploys through CodeDeploy on the alias, rolling back on alarms, with a pre-traffic hook', () => {
    // GIVEN an extra rollback alarm
    const stack = testStack();
    const queue = new ReliableQueue(stack, 'Jobs', { consumerTimeout: Duration.seconds(30) });
    const latency = new Alarm(stack, 'Latency', { metric: new Metric({ namespace: 'Ballast', metricName: 'LockWaitMs' }), threshold: 1, evaluationPeriods: 1 });
    // WHEN
    const worker = new QueueWorker(stack, 'Worker', { functionName: 'worker', queue, workerVersion: 'v1', rollbackAlarms: [latency] });
    const template = Template.fromStack(stack);
    // THEN
    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
      DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      AutoRollbackConfiguration: { Enabled: true, Events: Match.arrayWith(['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM']) },
      AlarmConfiguration: {
        Enabled: true,
        Alarms: [{ Name: { Ref: logicalId(worker.errorsAlarm.node.defaultChild) } }, { Name: { Ref: logicalId(latency.node.defaultChild) } }],
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
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors', Namespace: 'AWS/Lambda', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
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

  it('gives both log groups the retention and removal policy it is given', () => {
    // GIVEN/WHEN
    const { template } = build({ logRetention: RetentionDays.THREE_MONTHS, logRemovalPolicy: RemovalPolicy.RETAIN });
    // THEN
    const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
    assert.equal(groups.length, 2);
    for (const group of groups) {
      assert.equal(group.Properties.RetentionInDays, 90);
      assert.equal(group.DeletionPolicy, 'Retain');
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
