import { describe, it } from 'node:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import { Duration, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import type { BallastCache } from '../../infra/constructs/cache.ts';
import type { BallastNetwork } from '../../infra/constructs/network.ts';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { VPC_NETWORK_INTERFACE_ACTIONS } from '../../infra/constructs/ballast-function.ts';
import { functionVersion, REPO, synthStack } from '../helpers/infra.ts';

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

/** The logical id of `construct` (or its default child) as synthesized. */
const idOf = (construct: IConstruct): string => {
  const cfn = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(cfn).resolve(cfn.logicalId) as string;
};

/** The dev stack, its template and the logical ids the assertions refer to; synthesized once, read by many tests. */
let devSynth: ReturnType<typeof synthDev> | undefined;
const dev = () => (devSynth ??= synthDev());
function synthDev() {
  const { stack, template } = synthStack('dev');
  const network = stack.node.findChild('Network') as BallastNetwork;
  const cache = stack.node.findChild('Cache') as BallastCache;
  const ids = {
    state: idOf(stack.tables.state),
    control: idOf(stack.tables.control),
    vpc: idOf(network.vpc),
    functionSecurityGroup: idOf(network.functionSecurityGroup),
    cacheSecurityGroup: idOf(cache.securityGroup),
    cache: idOf(cache.cache),
    cacheUser: idOf(cache.user),
    privateSubnets: network.vpc.privateSubnets.map(idOf),
    invalidator: idOf(stack.invalidator),
    invalidatorFailures: idOf(stack.invalidatorFailures.queue),
    invalidatorFailuresDlq: idOf(stack.invalidatorFailures.deadLetterQueue),
    invalidationRepair: idOf(stack.invalidationRepair),
    readApi: idOf(stack.readApi),
    roles: {
      worker: idOf(stack.worker.function.executionRole),
      preTrafficCheck: idOf(stack.worker.preTrafficCheck.executionRole),
      invalidator: idOf(stack.invalidator.executionRole),
      invalidationRepair: idOf(stack.invalidationRepair.executionRole),
      readApi: idOf(stack.readApi.executionRole),
    },
  };
  return { stack, template, ids, resources: template.toJSON().Resources as Record<string, Resource> };
}

/** The Allow statements of every IAM policy attached to the role `roleId`. */
function allowedTo(template: Template, roleId: string): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => policy.Properties.Roles.some((role: unknown) => JSON.stringify(role) === JSON.stringify({ Ref: roleId })))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[])
    .filter((statement) => statement.Effect === 'Allow');
}
const actions = (statement: Statement) => [statement.Action].flat();
const resources = (statement: Statement) => [statement.Resource].flat().map((r) => JSON.stringify(r));
/** The actions `roleId` may perform on the table with logical id `tableId` (its ARN, not its stream). */
function tableActions(template: Template, roleId: string, tableId: string): string[] {
  const tableArn = JSON.stringify({ 'Fn::GetAtt': [tableId, 'Arn'] });
  return allowedTo(template, roleId).filter((s) => resources(s).includes(tableArn)).flatMap(actions);
}
const WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];

describe('BallastStack', () => {
  describe('tables', () => {
    it('streams new and old images and keeps PITR on the state table; TTL on the control table; both on-demand', () => {
      // GIVEN/WHEN
      const { resources, ids } = dev();
      const state = resources[ids.state]!.Properties;
      const control = resources[ids.control]!.Properties;
      // THEN
      assert.deepEqual(state.StreamSpecification, { StreamViewType: 'NEW_AND_OLD_IMAGES' });
      assert.equal(state.Replicas[0].PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled, true);
      assert.deepEqual(control.TimeToLiveSpecification, { AttributeName: 'expiresAtEpochSeconds', Enabled: true });
      assert.equal(control.StreamSpecification, undefined, 'nothing consumes control-table changes');
      for (const table of [state, control]) assert.equal(table.BillingMode, 'PAY_PER_REQUEST');
    });
  });

  describe('cache and network', () => {
    it('runs Valkey Serverless in the private subnets behind its own security group', () => {
      // GIVEN/WHEN
      const { resources, ids } = dev();
      const cache = resources[ids.cache]!;
      // THEN
      assert.equal(cache.Type, 'AWS::ElastiCache::ServerlessCache');
      assert.equal(cache.Properties.Engine, 'valkey');
      assert.deepEqual(cache.Properties.SubnetIds, ids.privateSubnets.map((id) => ({ Ref: id })));
      assert.deepEqual(cache.Properties.SecurityGroupIds, [{ 'Fn::GetAtt': [ids.cacheSecurityGroup, 'GroupId'] }]);
    });

    it('admits only the Lambda security group, on 6379, and lets the cache open no connection', () => {
      // GIVEN/WHEN
      const { template, resources, ids } = dev();
      const group = { 'Fn::GetAtt': [ids.cacheSecurityGroup, 'GroupId'] };
      // THEN exactly one ingress rule reaches the cache's group
      const ingress = Object.values(template.findResources('AWS::EC2::SecurityGroupIngress'))
        .filter((rule) => JSON.stringify(rule.Properties.GroupId) === JSON.stringify(group));
      assert.deepEqual(ingress.map((rule) => rule.Properties), [{
        Description: 'ballast functions',
        IpProtocol: 'tcp',
        FromPort: 6379,
        ToPort: 6379,
        GroupId: group,
        SourceSecurityGroupId: { 'Fn::GetAtt': [ids.functionSecurityGroup, 'GroupId'] },
      }]);
      const cacheGroup = resources[ids.cacheSecurityGroup]!.Properties;
      assert.equal(cacheGroup.SecurityGroupIngress, undefined);
      assert.deepEqual(cacheGroup.SecurityGroupEgress.map((rule: { Description: string }) => rule.Description), ['Disallow all traffic']);
    });

    it('reaches DynamoDB through a gateway endpoint and SQS through a private interface endpoint', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
        VpcEndpointType: 'Gateway',
        VpcId: { Ref: ids.vpc },
        ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.dynamodb']] },
      });
      template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
        VpcEndpointType: 'Interface',
        ServiceName: 'com.amazonaws.eu-west-1.sqs',
        PrivateDnsEnabled: true,
        SubnetIds: ids.privateSubnets.map((id) => ({ Ref: id })),
      });
      template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
        FromPort: 443, ToPort: 443, SourceSecurityGroupId: { 'Fn::GetAtt': [ids.functionSecurityGroup, 'GroupId'] },
      });
    });

    it('the DynamoDB endpoint admits every action a function in the VPC is granted on a table (a call the role allows and the endpoint refuses fails only on AWS)', () => {
      // GIVEN/WHEN
      const { template, ids, resources: byId } = dev();
      const [endpoint] = Object.values(template.findResources('AWS::EC2::VPCEndpoint', { Properties: { VpcEndpointType: 'Gateway' } }));
      const admitted = (endpoint!.Properties.PolicyDocument.Statement as Statement[]).filter((statement) => statement.Effect === 'Allow');
      const inVpc = Object.values(byId).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.VpcConfig)
        .map((fn) => (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]);
      assert.ok(inVpc.length >= 4, 'the worker, the invalidator, the repair and the read API run in the VPC');
      // THEN every (role, action, table) the roles allow, the endpoint's policy allows too
      const refused: string[] = [];
      for (const roleId of inVpc) {
        for (const tableId of [ids.state, ids.control]) {
          const tableArn = JSON.stringify({ 'Fn::GetAtt': [tableId, 'Arn'] });
          for (const action of tableActions(template, roleId, tableId)) {
            if (!admitted.some((statement) => actions(statement).includes(action) && resources(statement).includes(tableArn))) refused.push(`${roleId}: ${action} on ${tableId}`);
          }
        }
      }
      assert.deepEqual(refused, []);
    });

    it('the SQS endpoint admits every action a function in the VPC is granted on a queue, but the event source mapping\'s receive (Lambda polls from outside the VPC)', () => {
      // GIVEN/WHEN
      const { template, resources: byId } = dev();
      const [endpoint] = Object.values(template.findResources('AWS::EC2::VPCEndpoint', { Properties: { VpcEndpointType: 'Interface' } }));
      const admitted = (endpoint!.Properties.PolicyDocument.Statement as Statement[]).filter((statement) => statement.Effect === 'Allow');
      const inVpc = Object.values(byId).filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.VpcConfig)
        .map((fn) => (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]);
      const queues = Object.keys(template.findResources('AWS::SQS::Queue'));
      // THEN every (role, action, queue) the roles allow, the endpoint's policy allows too
      const refused: string[] = [];
      const checked: string[] = [];
      for (const roleId of inVpc) {
        for (const queueId of queues) {
          const queueArn = JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] });
          const granted = allowedTo(template, roleId).filter((statement) => resources(statement).includes(queueArn)).flatMap(actions);
          for (const action of granted.filter((candidate) => candidate !== 'sqs:ReceiveMessage')) {
            checked.push(action);
            if (!admitted.some((statement) => actions(statement).includes(action) && resources(statement).includes(queueArn))) refused.push(`${roleId}: ${action} on ${queueId}`);
          }
        }
      }
      assert.ok(inVpc.length >= 4 && queues.length >= 4 && checked.includes('sqs:SendMessage') && checked.includes('sqs:ChangeMessageVisibility'), JSON.stringify(checked));
      assert.deepEqual(refused, []);
    });

    it("applies a change of the cache user's access string before any function that connects as it is updated", () => {
      // GIVEN/WHEN
      const { stack, template, ids } = dev();
      const graph = template.toJSON().Resources as Record<string, { DependsOn?: string | string[]; Properties?: unknown }>;
      const dependsOn = (id: string): string[] => {
        const { DependsOn, Properties } = graph[id]!;
        const referenced = [...JSON.stringify(Properties ?? {}).matchAll(/\{"(?:Ref|Fn::GetAtt)":(?:"([^"]+)"|\["([^"]+)")/g)].map((m) => (m[1] ?? m[2])!);
        return [...[DependsOn ?? []].flat(), ...referenced].filter((dep) => dep in graph);
      };
      const reaches = (from: string, to: string): boolean => {
        const seen = new Set<string>();
        const todo = [from];
        while (todo.length > 0) {
          const id = todo.pop()!;
          if (id === to) return true;
          if (seen.has(id)) continue;
          seen.add(id);
          todo.push(...dependsOn(id));
        }
        return false;
      };
      // THEN CloudFormation updates the user (a new command the code calls, say) first: the new code
      // never meets the old ACL, which would refuse its scripts (NOPERM) until the user updated
      for (const fn of [stack.worker.function, stack.invalidator, stack.invalidationRepair, stack.readApi]) {
        assert.ok(reaches(idOf(fn), ids.cacheUser), `${idOf(fn)} does not depend on the cache user ${ids.cacheUser}`);
      }
    });

    it('puts the worker, the invalidator, the invalidation repair and the read API in the private subnets with the Lambda security group', () => {
      // GIVEN/WHEN
      const { stack, resources, ids } = dev();
      // THEN
      for (const fn of [stack.worker.function, stack.invalidator, stack.invalidationRepair, stack.readApi]) {
        assert.deepEqual(resources[idOf(fn)]!.Properties.VpcConfig, {
          SubnetIds: ids.privateSubnets.map((id) => ({ Ref: id })),
          SecurityGroupIds: [{ 'Fn::GetAtt': [ids.functionSecurityGroup, 'GroupId'] }],
        });
      }
    });
  });

  describe('cache invalidator', () => {
    it('reads the state stream with bisection, bounded retries and age, an on-failure queue and partial failures', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: ids.invalidator },
        EventSourceArn: { 'Fn::GetAtt': [ids.state, 'StreamArn'] },
        StartingPosition: 'LATEST',
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        MaximumRecordAgeInSeconds: 3600,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [ids.invalidatorFailures, 'Arn'] } } },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });

    it('keeps the on-failure queue and its DLQ encrypted and TLS-only, the DLQ longer', () => {
      // GIVEN/WHEN
      const { template, resources, ids } = dev();
      // THEN
      for (const queue of [ids.invalidatorFailures, ids.invalidatorFailuresDlq]) {
        assert.equal(resources[queue]!.Properties.SqsManagedSseEnabled, true, queue);
        template.hasResourceProperties('AWS::SQS::QueuePolicy', {
          Queues: [{ Ref: queue }],
          PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
        });
      }
      assert.equal(resources[ids.invalidatorFailures]!.Properties.MessageRetentionPeriod, Duration.days(4).toSeconds());
      assert.equal(resources[ids.invalidatorFailuresDlq]!.Properties.MessageRetentionPeriod, Duration.days(14).toSeconds());
    });
  });

  describe('invalidation repair', () => {
    it('consumes the invalidator\'s on-failure queue in small batches, reporting partial batch failures', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: ids.invalidationRepair },
        EventSourceArn: { 'Fn::GetAtt': [ids.invalidatorFailures, 'Arn'] },
        BatchSize: 5,
        ScalingConfig: { MaximumConcurrency: 2 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });

    it('is a ballast function on Node.js 24 with the repair timeout and the cache settings', () => {
      // GIVEN/WHEN
      const { resources, ids } = dev();
      const fn = resources[ids.invalidationRepair]!.Properties;
      // THEN
      assert.equal(fn.Runtime, 'nodejs24.x');
      assert.equal(fn.Timeout, 120);
      const env = fn.Environment.Variables;
      assert.deepEqual(env.STATE_TABLE_NAME, { Ref: ids.state });
      assert.deepEqual(env.BALLAST_CACHE_URL, resources[ids.invalidator]!.Properties.Environment.Variables.BALLAST_CACHE_URL, 'the invalidator\'s cache');
      assert.equal(env.BALLAST_CACHE_CLUSTER, 'true');
      assert.equal(env.POWERTOOLS_SERVICE_NAME, 'ballast-invalidation-repair');
    });

    it('gives the on-failure queue a redrive policy to its own DLQ (≥ 5 receives) and a visibility of 6 × the repair timeout', () => {
      // GIVEN/WHEN
      const { resources, ids } = dev();
      const queue = resources[ids.invalidatorFailures]!.Properties;
      // THEN
      assert.deepEqual(queue.RedrivePolicy.deadLetterTargetArn, { 'Fn::GetAtt': [ids.invalidatorFailuresDlq, 'Arn'] });
      assert.ok(queue.RedrivePolicy.maxReceiveCount >= 5, `maxReceiveCount ${queue.RedrivePolicy.maxReceiveCount}`);
      assert.equal(queue.VisibilityTimeout, 6 * resources[ids.invalidationRepair]!.Properties.Timeout);
    });

    it('names the repair function in the stack outputs', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      template.hasOutput('InvalidationRepairFunctionName', { Value: { Ref: ids.invalidationRepair } });
    });

    it('refuses a repair timeout whose derived visibility timeout exceeds SQS\'s 12 hours', () => {
      // WHEN/THEN
      assert.throws(
        () => synthStack('dev', (c) => ({ ...c, invalidationRepair: { ...c.invalidationRepair, timeout: Duration.hours(3) } })),
        /ballast-dev\/InvalidatorFailures: visibilityTimeout 64800 s exceeds SQS's 12 hours/,
      );
    });
  });

  describe('read API', () => {
    it('serves a Function URL that requires IAM auth', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', TargetFunctionArn: { 'Fn::GetAtt': [ids.readApi, 'Arn'] } });
    });
  });

  describe('least privilege', () => {
    it('lets the read API read the state table but not write it, and nothing of the control table', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      const onState = tableActions(template, ids.roles.readApi, ids.state);
      // THEN
      assert.ok(onState.includes('dynamodb:GetItem'));
      assert.deepEqual(onState.filter((a) => WRITES.includes(a)), []);
      assert.deepEqual(tableActions(template, ids.roles.readApi, ids.control), []);
    });

    it('lets the worker write both tables', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      // THEN
      for (const table of [ids.state, ids.control]) {
        const allowed = tableActions(template, ids.roles.worker, table);
        for (const action of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem', 'dynamodb:GetItem']) {
          assert.ok(allowed.includes(action), `worker may ${action} on ${table}`);
        }
      }
    });

    it('lets the invalidator read the state stream but write no table', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      const statements = allowedTo(template, ids.roles.invalidator);
      // THEN
      const onStream = statements.filter((s) => resources(s).includes(JSON.stringify({ 'Fn::GetAtt': [ids.state, 'StreamArn'] }))).flatMap(actions);
      assert.ok(onStream.includes('dynamodb:GetRecords'));
      assert.deepEqual(statements.flatMap(actions).filter((a) => WRITES.includes(a)), []);
    });

    it('lets the invalidation repair read the state stream (iterators and records only), get items and consume its queue, and nothing else', () => {
      // GIVEN/WHEN
      const { template, ids } = dev();
      const all = allowedTo(template, ids.roles.invalidationRepair);
      // (its ENIs in the VPC: exactly the network interface actions, checked for every function below)
      const eni = all.filter((s) => actions(s).some((a) => a.startsWith('ec2:')));
      assert.deepEqual(eni.map((s) => [actions(s).sort(), s.Resource]), [[[...VPC_NETWORK_INTERFACE_ACTIONS].sort(), '*']]);
      const statements = all.filter((s) => !actions(s).some((a) => a.startsWith('logs:') || a.startsWith('xray:') || a.startsWith('ec2:')));
      // THEN each statement names exactly one resource and the actions on it
      const byResource = Object.fromEntries(statements.map((s) => [resources(s).join(), actions(s).sort()]));
      assert.deepEqual(byResource, {
        [JSON.stringify({ 'Fn::GetAtt': [ids.state, 'StreamArn'] })]: ['dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        [JSON.stringify({ 'Fn::GetAtt': [ids.state, 'Arn'] })]: ['dynamodb:GetItem'],
        [JSON.stringify({ 'Fn::GetAtt': [ids.invalidatorFailures, 'Arn'] })]:
          ['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage'],
        // IAM auth to the cache, as its functions' user
        [[JSON.stringify({ 'Fn::GetAtt': [ids.cache, 'ARN'] }), JSON.stringify({ 'Fn::GetAtt': [ids.cacheUser, 'Arn'] })].join()]: ['elasticache:Connect'],
      });
      assert.equal(statements.length, 4);
    });

    it('grants no wildcard action, and "*" resources only to what cannot be scoped: X-Ray, the VPC functions\' ENIs, the post-traffic check\'s metric reads', () => {
      const XRAY = ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'];
      for (const env of ENVIRONMENT_NAMES) {
        // GIVEN/WHEN
        const { stack, template } = synthStack(env);
        const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Resource[];
        const statements = policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
        const inVpc = [stack.worker.function, stack.invalidator, stack.invalidationRepair, stack.readApi].map((fn) => idOf(fn.executionRole));
        const postTrafficCheck = stack.worker.postTrafficCheck && idOf(stack.worker.postTrafficCheck.executionRole);
        // THEN
        assert.ok(statements.length > 0);
        assert.deepEqual(statements.flatMap(actions).filter((a) => a.includes('*')), [], `${env}: no dynamodb:* or any other wildcard action`);
        for (const policy of policies) {
          const roles = (policy.Properties.Roles as Array<{ Ref: string }>).map((role) => role.Ref);
          for (const statement of (policy.Properties.PolicyDocument.Statement as Statement[]).filter((s) => resources(s).includes('"*"'))) {
            const granted = actions(statement).sort();
            const where = `${env}: ${JSON.stringify(granted)} on "*" for ${roles.join()}`;
            if (granted.every((a) => XRAY.includes(a))) continue;
            if (granted.some((a) => a.startsWith('ec2:'))) {
              assert.deepEqual(granted, [...VPC_NETWORK_INTERFACE_ACTIONS].sort(), where);
              assert.ok(roles.every((role) => inVpc.includes(role)), `${where}: only functions in the VPC`);
            } else {
              assert.deepEqual(granted, ['cloudwatch:GetMetricData'], where);
              assert.deepEqual(roles, [postTrafficCheck], `${where}: only the post-traffic check`);
            }
          }
        }
        // AND each VPC function has its ENI statement; only staging and prod have a post-traffic check
        for (const role of inVpc) {
          assert.ok(allowedTo(template, role).some((s) => actions(s).includes('ec2:CreateNetworkInterface') && resources(s).includes('"*"')), `${env}: ${role} ENIs`);
        }
        assert.equal(statements.some((s) => actions(s).includes('cloudwatch:GetMetricData')), env === 'staging' || env === 'prod', `${env}: GetMetricData`);
        assert.doesNotMatch(JSON.stringify(template.toJSON()), /"logs:\*"/, `${env}: no logs:* anywhere`);
      }
    });

    it('attaches no managed policy to any function role, AWSLambdaVPCAccessExecutionRole included', () => {
      for (const env of ENVIRONMENT_NAMES) {
        // GIVEN/WHEN
        const { stack, template } = synthStack(env);
        const functions = [stack.worker.function, stack.worker.preTrafficCheck, stack.worker.postTrafficCheck, stack.invalidator, stack.invalidationRepair, stack.readApi];
        const expected = functions.flatMap((fn) => (fn ? [idOf(fn.executionRole)] : [])).sort();
        const roles = Object.entries(template.findResources('AWS::IAM::Role') as Record<string, Resource>)
          .filter(([, role]) => JSON.stringify(role.Properties.AssumeRolePolicyDocument).includes('lambda.amazonaws.com'))
          // CDK's own provider behind the VPC's restrictDefaultSecurityGroup is no ballast function (it brings AWSLambdaBasicExecutionRole).
          .filter(([id]) => !id.startsWith('CustomVpcRestrictDefaultSGCustomResourceProviderRole'));
        // THEN the Lambda roles are the ballast functions' (worker, hooks, invalidator, repair, read API)
        assert.deepEqual(roles.map(([id]) => id).sort(), expected, env);
        assert.equal(expected.length, env === 'staging' || env === 'prod' ? 6 : 5, `${env}: a post-traffic check only where canary.minRecords > 0`);
        // AND none has a managed policy
        for (const [id, role] of roles) assert.equal(role.Properties.ManagedPolicyArns, undefined, `${env}: ${id}`);
      }
    });

    it('scopes each function\'s own log statement to its log group, without AWSLambdaBasicExecutionRole', () => {
      // GIVEN/WHEN
      const { stack, template, resources } = dev();
      // THEN
      for (const fn of [stack.worker.function, stack.worker.preTrafficCheck, stack.invalidator, stack.invalidationRepair, stack.readApi]) {
        const roleId = idOf(fn.executionRole);
        const logGroup = resources[idOf(fn)]!.Properties.LoggingConfig.LogGroup;
        const logs = allowedTo(template, roleId).filter((s) => actions(s).some((a) => a.startsWith('logs:')));
        assert.deepEqual(logs.map((s) => [actions(s), s.Resource]), [[['logs:CreateLogStream', 'logs:PutLogEvents'], { 'Fn::GetAtt': [logGroup.Ref, 'Arn'] }]]);
        assert.doesNotMatch(JSON.stringify(resources[roleId]!.Properties.ManagedPolicyArns ?? []), /AWSLambdaBasicExecutionRole/);
      }
    });
  });

  describe('refusals', () => {
    it('refuses an idempotency retention that does not outlive queue + DLQ retention + replay window', () => {
      // GIVEN 4 + 14 + 7 = 25 days of possible redelivery WHEN duplicates are remembered 24 days THEN refused
      assert.throws(
        () => synthStack('dev', (c) => ({ ...c, idempotencyRetention: Duration.days(24) })),
        /ballast-dev: idempotency retention \(24 days\) is shorter than queue retention \+ DLQ retention \+ replay window \(4 \+ 14 \+ 7 = 25 days\): raise idempotencyRetention to at least 25 days/,
      );
      // AND a longer replay window breaks the default 35 days the same way
      assert.throws(
        () => synthStack('prod', (c) => ({ ...c, replayWindow: Duration.days(20) })),
        /ballast-prod: idempotency retention \(35 days\) is shorter than .* \(4 \+ 14 \+ 20 = 38 days\)/,
      );
      // AND exactly the window is accepted
      assert.doesNotThrow(() => synthStack('dev', (c) => ({ ...c, idempotencyRetention: Duration.days(25) })));
    });

    it('refuses a maxReceiveCount below 5 from the environment config', () => {
      // WHEN/THEN
      assert.throws(
        () => synthStack('staging', (c) => ({ ...c, queue: { ...c.queue, maxReceiveCount: 3 } })),
        /ballast-staging\/Jobs: maxReceiveCount 3 is below 5/,
      );
    });
  });

  describe('per environment', () => {
    /** DeletionPolicy of the tables, queues, cache and function log groups. */
    function statefulPolicies(env: string) {
      const { stack, template } = synthStack(env);
      const all = template.toJSON().Resources as Record<string, Resource>;
      const logGroups = [stack.worker.function, stack.worker.preTrafficCheck, stack.invalidator, stack.invalidationRepair, stack.readApi]
        .map((fn) => all[idOf(fn)]!.Properties.LoggingConfig.LogGroup.Ref as string);
      const stateful = Object.entries(all)
        .filter(([id, r]) => ['AWS::DynamoDB::GlobalTable', 'AWS::SQS::Queue', 'AWS::ElastiCache::ServerlessCache'].includes(r.Type) || logGroups.includes(id));
      return { stateful, all };
    }

    it('prod retains every table, queue, cache and function log group, with deletion protection on the tables', () => {
      // GIVEN/WHEN
      const { stateful } = statefulPolicies('prod');
      // THEN
      assert.equal(stateful.length, 2 + 4 + 1 + 5);
      for (const [id, resource] of stateful) {
        assert.equal(resource.DeletionPolicy, 'Retain', id);
        if (resource.Type === 'AWS::DynamoDB::GlobalTable') assert.equal(resource.Properties.Replicas[0].DeletionProtectionEnabled, true, id);
      }
    });

    it('dev deletes them with the stack and has no deletion protection', () => {
      // GIVEN/WHEN
      const { stateful } = statefulPolicies('dev');
      // THEN
      for (const [id, resource] of stateful) {
        assert.equal(resource.DeletionPolicy, 'Delete', id);
        if (resource.Type === 'AWS::DynamoDB::GlobalTable') assert.equal(resource.Properties.Replicas[0].DeletionProtectionEnabled, false, id);
      }
    });
  });
});

describe('codeVersion', () => {
  it('hashes what one function bundles: a change elsewhere keeps its version, a change it imports does not', async () => {
    const { codeVersion } = await import('../../infra/code-version.ts');
    const { stack } = synthStack('local');
    assert.match(codeVersion(stack.workerEntry, REPO), /^\d+\.\d+\.\d+\+[0-9a-f]{8}$/);
    assert.equal(codeVersion(stack.workerEntry, REPO), codeVersion(stack.workerEntry, REPO), 'stable for the same code');
    assert.notEqual(codeVersion(stack.workerEntry, REPO), functionVersion('read-api'), 'each function has its own version');

    const root = mkdtempSync(join(tmpdir(), 'ballast-code-version-'));
    try {
      const write = (path: string, text: string) => {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), text);
      };
      const lock = (redisVersion: string, commanderVersion: string, denqueVersion = '2.1.0') => JSON.stringify({ lockfileVersion: 3, packages: {
        'node_modules/ioredis': { version: redisVersion, dependencies: { denque: '^2.1.0' } },
        'node_modules/denque': { version: denqueVersion },
        'node_modules/commander': { version: commanderVersion },
      } });
      write('package.json', JSON.stringify({ version: '1.2.3' }));
      write('package-lock.json', lock('6.0.0', '14.0.0'));
      write('functions/job/index.ts', "import { used } from '../../shared/used.ts';\nexport const handler = used;\n");
      write('shared/used.ts', "import { Redis } from 'ioredis';\nexport const used = () => Redis;\n");
      write('shared/unused.ts', 'export const unused = 1;\n');
      write('cli/main.ts', "import { Command } from 'commander';\nexport const cli = new Command();\n");
      const first = codeVersion('functions/job/index.ts', root);
      assert.match(first, /^1\.2\.3\+[0-9a-f]{8}$/);

      write('shared/unused.ts', 'export const unused = 2;\n');
      write('cli/main.ts', '// the CLI changed\n');
      write('package-lock.json', lock('6.0.0', '14.1.0'));
      assert.equal(codeVersion('functions/job/index.ts', root), first, 'a CLI change, an unimported shared file or a package the bundle does not use leave the version alone');

      write('shared/used.ts', "import { Redis } from 'ioredis';\nexport const used = () => [Redis];\n");
      const second = codeVersion('functions/job/index.ts', root);
      assert.notEqual(second, first, 'a shared file the function imports changes it');
      write('package-lock.json', lock('6.0.0', '14.1.0', '2.2.0'));
      const third = codeVersion('functions/job/index.ts', root);
      assert.notEqual(third, second, 'so does a locked dependency of a package it imports');

      // AND the module bundled in place of a built-in is part of the version too
      write('shims/http.cjs', "module.exports = process.getBuiltinModule('node:http');\n");
      const aliases = { 'node:http': join(root, 'shims/http.cjs') };
      const shimmed = codeVersion('functions/job/index.ts', root, aliases);
      assert.notEqual(shimmed, third, 'bundling a built-in another way changes it');
      write('shims/http.cjs', "module.exports = require('node:http');\n");
      assert.notEqual(codeVersion('functions/job/index.ts', root, aliases), shimmed, 'and so does editing what is bundled in its place');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
