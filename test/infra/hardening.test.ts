/**
 * What a strict reviewer checks in the deployed template, environment by environment: a pinned
 * cache engine with a bill ceiling, flow logs kept as long as the environment's other logs, a NAT
 * gateway per zone in prod, and a prod stack that cannot be deleted by accident.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { environmentConfig, ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { TRANSACTIONAL_ITEM_ACTIONS } from '../../infra/constructs/tables.ts';
import { synthStack } from '../helpers/infra.ts';

describe('hardening of the deployed template', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: Valkey pinned to major 8 with usage limits; the flow log kept as long as the other logs`, () => {
      // GIVEN/WHEN the environment's stack
      const config = environmentConfig(env);
      const { template } = synthStack(env);
      // THEN the cache has its version and its ceiling
      template.hasResourceProperties('AWS::ElastiCache::ServerlessCache', {
        Engine: 'valkey',
        MajorEngineVersion: '8',
        CacheUsageLimits: { DataStorage: { Maximum: config.cache.maxDataStorageGb, Unit: 'GB' }, ECPUPerSecond: { Maximum: config.cache.maxEcpuPerSecond } },
      });
      // AND the flow log group has the environment's retention (no two-year default anywhere)
      const flowLog = Object.values(template.findResources('AWS::EC2::FlowLog'))[0] as { Properties: { LogGroupName: { Ref: string } } };
      const group = template.toJSON().Resources[flowLog.Properties.LogGroupName.Ref] as { Properties: { RetentionInDays: number } };
      assert.equal(group.Properties.RetentionInDays, config.logRetention);
      template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: RetentionDays.TWO_YEARS }, 0);
    });
  }

  it('prod: a NAT gateway in every zone, and termination protection on; dev: neither', () => {
    const prod = synthStack('prod');
    const zones = new Set(Object.values(prod.template.findResources('AWS::EC2::Subnet')).map((s) => JSON.stringify((s as { Properties: { AvailabilityZone: unknown } }).Properties.AvailabilityZone)));
    prod.template.resourceCountIs('AWS::EC2::NatGateway', zones.size);
    assert.equal(zones.size, 3);
    assert.equal(prod.stack.terminationProtection, true);
    const dev = synthStack('dev');
    dev.template.resourceCountIs('AWS::EC2::NatGateway', 1);
    assert.equal(dev.stack.terminationProtection, false);
  });

  it('refuses cache limits outside what ElastiCache Serverless accepts', () => {
    assert.throws(() => synthStack('dev', (c) => ({ ...c, cache: { ...c.cache, maxDataStorageGb: 0 } })), /maxDataStorageGb 0 is outside 1–5,000 GB/);
    assert.throws(() => synthStack('dev', (c) => ({ ...c, cache: { ...c.cache, maxEcpuPerSecond: 10 } })), /maxEcpuPerSecond 10 is outside 1,000–15,000,000/);
  });
});

describe('least privilege: what the functions may do to the tables', () => {
  type Statement = { Action: string | string[]; Resource: unknown; Effect: string };
  const statementsOf = (template: ReturnType<typeof synthStack>['template'], rolePrefix: string): Statement[] =>
    Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify((policy as { Properties: { Roles: unknown } }).Properties.Roles).includes(rolePrefix))
      .flatMap((policy) => (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement);
  const dynamoActions = (statements: Statement[]) => statements.flatMap((s) => [s.Action].flat()).filter((a) => a.startsWith('dynamodb:'));

  it('the worker gets item-level transaction actions and GetItem on the two tables, nothing else', () => {
    // GIVEN/WHEN the prod stack
    const { template } = synthStack('prod');
    // THEN the worker's DynamoDB actions are exactly the transactional item actions
    const actions = new Set(dynamoActions(statementsOf(template, 'WorkerFunctionServiceRole')));
    assert.deepEqual([...actions].sort(), [...TRANSACTIONAL_ITEM_ACTIONS].sort());
    // AND nothing of the stack may Scan, Query or batch-write the tables
    const all = dynamoActions(Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement));
    assert.deepEqual(all.filter((a) => /Scan|Query|BatchWrite|BatchGet|\*/.test(a)), []);
  });

  it('the read API and the repair only read items of the state table', () => {
    const { template } = synthStack('prod');
    assert.deepEqual(dynamoActions(statementsOf(template, 'ReadApiServiceRole')), ['dynamodb:GetItem']);
    assert.deepEqual(new Set(dynamoActions(statementsOf(template, 'InvalidationRepairServiceRole'))),
      new Set(['dynamodb:GetShardIterator', 'dynamodb:GetRecords', 'dynamodb:GetItem']));
  });
});
