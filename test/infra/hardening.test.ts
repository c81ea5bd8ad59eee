/**
 * What a strict reviewer checks in the deployed template, environment by environment: a pinned
 * cache engine with a bill ceiling, flow logs kept as long as the environment's other logs, a NAT
 * gateway per zone in prod, and a prod stack that cannot be deleted by accident.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { environmentConfig, ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { SCREENING_ACTION, TRANSACTIONAL_ITEM_ACTIONS } from '../../infra/constructs/tables.ts';
import { synthStack } from '../helpers/infra.ts';
import { WORKLOADS } from '../fixtures/workloads/registry.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';

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

  it('the worker gets item-level transaction actions and GetItem on the two tables, and a batch read of the control table only, nothing else', () => {
    // GIVEN/WHEN the prod stack
    const { template } = synthStack('prod');
    const worker = statementsOf(template, 'WorkerFunctionServiceRole');
    // THEN the worker's DynamoDB actions are exactly the transactional item actions, plus the screening read
    const actions = new Set(dynamoActions(worker));
    assert.deepEqual([...actions].sort(), [...TRANSACTIONAL_ITEM_ACTIONS, SCREENING_ACTION].sort());
    // AND that read reaches the control table alone (its idempotency records), never the state table
    const screening = worker.filter((s) => [s.Action].flat().includes(SCREENING_ACTION));
    assert.equal(screening.length, 1);
    const resources = JSON.stringify(screening[0]?.Resource);
    assert.match(resources, /TablesControl/);
    assert.doesNotMatch(resources, /TablesState/);
    // AND nothing of the stack may Scan, Query or batch-write the tables, nor batch-read them but that
    const all = dynamoActions(Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((p) => (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument.Statement));
    assert.deepEqual(all.filter((a) => /Scan|Query|BatchWrite|\*/.test(a)), []);
    assert.equal(all.filter((a) => a === SCREENING_ACTION).length, 1);
  });

  it('the read API and the repair only read items of the state table', () => {
    const { template } = synthStack('prod');
    assert.deepEqual(dynamoActions(statementsOf(template, 'ReadApiServiceRole')), ['dynamodb:GetItem']);
    assert.deepEqual(new Set(dynamoActions(statementsOf(template, 'InvalidationRepairServiceRole'))),
      new Set(['dynamodb:GetShardIterator', 'dynamodb:GetRecords', 'dynamodb:GetItem']));
  });
});

describe('cache access: IAM-authenticated users only, names unique per stack instance', () => {
  type Resource = { Type: string; Properties: Record<string, unknown> };
  const resourcesOf = (template: ReturnType<typeof synthStack>['template'], type: string) =>
    Object.entries(template.toJSON().Resources as Record<string, Resource>).filter(([, r]) => r.Type === type);
  const CACHE_FUNCTIONS = ['CacheInvalidator', 'InvalidationRepair', 'ReadApi', 'WorkerFunction'];

  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: the cache admits its user group only, whose functions' user authenticates with IAM; the default user is disabled`, () => {
      // GIVEN/WHEN the environment's stack
      const { template } = synthStack(env);
      const [[, user]] = resourcesOf(template, 'AWS::ElastiCache::User').filter(([, r]) => r.Properties.UserName !== 'default') as [[string, Resource]];
      const [defaultUser] = resourcesOf(template, 'AWS::ElastiCache::User').filter(([, r]) => r.Properties.UserName === 'default');
      const [[, group]] = resourcesOf(template, 'AWS::ElastiCache::UserGroup') as [[string, Resource]];
      const [[, cache]] = resourcesOf(template, 'AWS::ElastiCache::ServerlessCache') as [[string, Resource]];
      // THEN the functions' user is an IAM user (UserName = UserId, as IAM auth requires) limited to ballast's keys
      assert.deepEqual(user.Properties.AuthenticationMode, { Type: 'iam' });
      assert.equal(user.Properties.Engine, 'valkey');
      assert.deepEqual(user.Properties.UserName, user.Properties.UserId);
      const keys = workloadEntities(WORKLOADS).map((entity) => `~${entity.name}:\\*`).join(' ');
      assert.match(String(user.Properties.AccessString), new RegExp(`^on ${keys} -@all \\+`), 'one key pattern per registered entity');
      assert.doesNotMatch(String(user.Properties.AccessString), /\+@|allcommands|allkeys|flushall|~\*|&/i, 'no command category, key wildcard or channel');
      // AND the group holds it and a disabled default user whose password is no template literal
      assert.ok(defaultUser, 'every user group needs a user named default');
      assert.equal(defaultUser[1].Properties.AccessString, 'off -@all');
      assert.match(JSON.stringify(defaultUser[1].Properties.AuthenticationMode), /\{\{resolve:secretsmanager:/);
      assert.deepEqual(group.Properties.Engine, 'valkey');
      assert.deepEqual(group.Properties.UserIds, [user.Properties.UserId, defaultUser[1].Properties.UserId]);
      // AND the cache uses that group
      assert.deepEqual(cache.Properties.UserGroupId, group.Properties.UserGroupId);
    });
  }

  it('the cache, user and group names are no fixed literal: they end in the stack id and fit ElastiCache\'s 40 characters', () => {
    // GIVEN/WHEN the prod stack
    const { template } = synthStack('prod');
    const [[, cache]] = resourcesOf(template, 'AWS::ElastiCache::ServerlessCache') as [[string, Resource]];
    const names = [
      cache.Properties.ServerlessCacheName,
      ...resourcesOf(template, 'AWS::ElastiCache::User').map(([, r]) => r.Properties.UserId),
      ...resourcesOf(template, 'AWS::ElastiCache::UserGroup').map(([, r]) => r.Properties.UserGroupId),
    ];
    for (const name of names) {
      // THEN each is an expression over AWS::StackId (Fn::Select of its Fn::Split), not a string
      assert.notEqual(typeof name, 'string', JSON.stringify(name));
      const json = JSON.stringify(name);
      assert.ok(json.includes('"Fn::Select"') && json.includes('{"Ref":"AWS::StackId"}'), json);
      // AND with a CloudFormation stack id's UUID in place, a valid ElastiCache name of at most 40 characters
      const resolved = resolveWithStackId(name, 'arn:aws:cloudformation:eu-west-1:123456789012:stack/ballast-prod/e722ae60-fe62-11e8-9a0e-0ae8cc519968');
      assert.match(resolved, /^[a-z](?!.*--)[a-z0-9-]{0,38}[a-z0-9]$/, resolved);
    }
    assert.match(resolveWithStackId(cache.Properties.ServerlessCacheName, 'arn:aws:cloudformation:eu-west-1:1:stack/s/e722ae60-fe62-11e8-9a0e-0ae8cc519968'),
      /^ballast-[0-9a-f]{8}-e722ae60-0ae8cc519968$/);
  });

  it('the cache\'s name changes with its subnets (a replacement gets a new name), and with nothing else', () => {
    // GIVEN the dev stack, and the same stack with another subnet layout or other usage limits
    const nameOf = (template: ReturnType<typeof synthStack>['template']) =>
      JSON.stringify((resourcesOf(template, 'AWS::ElastiCache::ServerlessCache')[0]![1]).Properties.ServerlessCacheName);
    const dev = nameOf(synthStack('dev').template);
    // WHEN / THEN
    assert.notEqual(nameOf(synthStack('dev', (c) => ({ ...c, network: { ...c.network, maxAzs: 3 } })).template), dev);
    assert.equal(nameOf(synthStack('dev', (c) => ({ ...c, cache: { ...c.cache, maxEcpuPerSecond: 200_000 } })).template), dev);
  });

  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: each cache-using function may elasticache:Connect to exactly the cache and its user, and has BALLAST_CACHE_AUTH=iam`, () => {
      // GIVEN/WHEN the environment's stack
      const { template } = synthStack(env);
      const [[cacheId, cache]] = resourcesOf(template, 'AWS::ElastiCache::ServerlessCache') as [[string, Resource]];
      const [[userId, user]] = resourcesOf(template, 'AWS::ElastiCache::User').filter(([, r]) => r.Properties.UserName !== 'default') as [[string, Resource]];
      const policies = resourcesOf(template, 'AWS::IAM::Policy');
      const connectStatements = (roleId: string) => policies
        .filter(([, p]) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
        .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }).Statement)
        .filter((s) => [s.Action].flat().some((a) => a.startsWith('elasticache:')));
      const cacheUsers = resourcesOf(template, 'AWS::Lambda::Function')
        .filter(([, fn]) => (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.BALLAST_CACHE_URL);
      // THEN the cache-using functions are exactly the four
      assert.deepEqual(cacheUsers.map(([id]) => CACHE_FUNCTIONS.find((prefix) => id.startsWith(prefix))).sort(), CACHE_FUNCTIONS);
      for (const [id, fn] of cacheUsers) {
        // AND each connects with IAM, as the user, to the cache by name
        const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
        assert.equal(variables.BALLAST_CACHE_AUTH, 'iam', id);
        assert.equal(variables.BALLAST_CACHE_CLUSTER, 'true', id);
        assert.deepEqual(variables.BALLAST_CACHE_USER, user.Properties.UserId, id);
        assert.deepEqual(variables.BALLAST_CACHE_NAME, cache.Properties.ServerlessCacheName, id);
        // AND its role may connect to exactly the cache and the user
        const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
        const statements = connectStatements(roleId);
        assert.deepEqual(statements.map((s) => s.Action), ['elasticache:Connect'], id);
        assert.deepEqual(statements[0]?.Resource, [{ 'Fn::GetAtt': [cacheId, 'ARN'] }, { 'Fn::GetAtt': [userId, 'Arn'] }], id);
      }
      // AND no other role may connect
      const allConnect = policies.flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement)
        .filter((s) => [s.Action].flat().includes('elasticache:Connect'));
      assert.equal(allConnect.length, cacheUsers.length);
    });
  }
});

/** Evaluates the Fn::Join / Fn::Select / Fn::Split / Ref AWS::StackId subset the cache's names use. */
function resolveWithStackId(value: unknown, stackId: string): string {
  const evaluate = (v: unknown): unknown => {
    if (typeof v === 'string' || Array.isArray(v)) return Array.isArray(v) ? v.map(evaluate) : v;
    const [[fn, args]] = Object.entries(v as Record<string, unknown>) as [[string, unknown]];
    if (fn === 'Ref' && args === 'AWS::StackId') return stackId;
    const [a, b] = args as [unknown, unknown];
    if (fn === 'Fn::Join') return (evaluate(b) as string[]).join(a as string);
    if (fn === 'Fn::Split') return String(evaluate(b)).split(a as string);
    if (fn === 'Fn::Select') return (evaluate(b) as unknown[])[Number(a)];
    throw new Error(`unexpected ${fn} in a cache name`);
  };
  return String(evaluate(value));
}
