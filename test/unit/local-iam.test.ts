import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dynamoDbCalls, sqsCalls } from '../../local/iam/requests.ts';
import { Authorizer, refusalMessage, type CallPrincipal } from '../../local/iam/authorizer.ts';
import { emptyStackIam, type StackIam } from '../../local/iam/template.ts';
import { functionCredentials, signingKeyOf } from '../../local/iam/gateway.ts';

const scope = { region: 'us-east-1', accountId: '000000000000' };
const table = (name: string) => `arn:aws:dynamodb:us-east-1:000000000000:table/${name}`;
const QUEUE = 'arn:aws:sqs:us-east-1:000000000000:jobs';
const TOPIC = 'arn:aws:sns:us-east-1:000000000000:alarms';
const ROLE = 'arn:aws:iam::000000000000:role/stack-WorkerRole';

describe('local IAM: what a request asks of IAM', () => {
  it('a transaction is one item action per table it touches; a batch, its action on each table; an index query, on the index', () => {
    assert.deepEqual(dynamoDbCalls('TransactWriteItems', {
      TransactItems: [{ Put: { TableName: 'state' } }, { Update: { TableName: 'control' } }, { ConditionCheck: { TableName: 'control' } }, { Update: { TableName: 'control' } }],
    }, scope), [
      { action: 'dynamodb:PutItem', resource: table('state') },
      { action: 'dynamodb:UpdateItem', resource: table('control') },
      { action: 'dynamodb:ConditionCheckItem', resource: table('control') },
    ]);
    assert.deepEqual(dynamoDbCalls('BatchGetItem', { RequestItems: { control: {}, state: {} } }, scope), [
      { action: 'dynamodb:BatchGetItem', resource: table('control') },
      { action: 'dynamodb:BatchGetItem', resource: table('state') },
    ]);
    assert.deepEqual(dynamoDbCalls('Query', { TableName: 'state', IndexName: 'byOwner' }, scope), [{ action: 'dynamodb:Query', resource: `${table('state')}/index/byOwner` }]);
    assert.deepEqual(dynamoDbCalls('ListTables', {}, scope), [{ action: 'dynamodb:ListTables', resource: '*' }]);
  });

  it('an SQS request is its operation on the queue its URL names; a batch as its single form', () => {
    assert.deepEqual(sqsCalls('SendMessageBatch', { QueueUrl: 'http://127.0.0.1:1/000000000000/jobs' }, scope), [{ action: 'sqs:SendMessage', resource: QUEUE }]);
    assert.deepEqual(sqsCalls('GetQueueUrl', { QueueName: 'jobs' }, scope), [{ action: 'sqs:GetQueueUrl', resource: QUEUE }]);
    assert.deepEqual(sqsCalls('ListQueues', {}, scope), [{ action: 'sqs:ListQueues', resource: '*' }]);
  });

  it('a sandbox\'s key names its function, read back from the SigV4 header', () => {
    const { accessKeyId } = functionCredentials('stack-Worker');
    assert.match(accessKeyId, /^ASIALOCAL[0-9A-F]{16}$/);
    assert.equal(functionCredentials('stack-Worker').accessKeyId, accessKeyId, 'stable across restarts');
    assert.notEqual(functionCredentials('stack-ReadApi').accessKeyId, accessKeyId);
    assert.equal(signingKeyOf(`AWS4-HMAC-SHA256 Credential=${accessKeyId}/20261206/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=abc`), accessKeyId);
    assert.equal(signingKeyOf(undefined), undefined);
  });
});

describe('local IAM: decisions', () => {
  const worker: CallPrincipal = { kind: 'function', functionName: 'stack-Worker', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:stack-Worker' };
  const iam = (overrides: Partial<StackIam> = {}): StackIam => ({
    ...emptyStackIam(),
    roles: new Map([[ROLE, {
      logicalId: 'WorkerRole', name: 'stack-WorkerRole', arn: ROLE, unknownManagedPolicies: [],
      policies: [{ name: 'WorkerRoleDefaultPolicy', policy: { Version: '2012-10-17', Statement: [
        { Sid: 'Tables', Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'], Resource: table('control') },
        { Sid: 'Queue', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: QUEUE },
      ] } }],
    }]]),
    functions: new Map([['stack-Worker', { roleArn: ROLE, vpcId: 'vpc-1' }]]),
    ...overrides,
  });
  const endpoint = (actions: string[]) => [{
    logicalId: 'DynamoDbEndpoint', service: 'dynamodb', vpcId: 'vpc-1',
    policy: { name: 'DynamoDbEndpoint (VPC endpoint policy)', policy: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: '*', Action: actions, Resource: table('control') }] } },
  }];

  it('allows what the role grants and the endpoint admits; refuses, as AWS words it, what the endpoint does not admit', async () => {
    const authorizer = new Authorizer({ iam: iam({ endpoints: endpoint(['dynamodb:GetItem']) }), accountId: '000000000000' });
    assert.equal((await authorizer.authorize(worker, { action: 'dynamodb:GetItem', resource: table('control') }, { service: 'dynamodb' })).allowed, true);
    const refused = await authorizer.authorize(worker, { action: 'dynamodb:BatchGetItem', resource: table('control') }, { service: 'dynamodb' });
    assert.equal(refused.allowed, false);
    assert.equal(refusalMessage(refused), `User: arn:aws:sts::000000000000:assumed-role/stack-WorkerRole/stack-Worker is not authorized to perform: dynamodb:BatchGetItem on resource: ${table('control')} because no VPC endpoint policy allows the dynamodb:BatchGetItem action (DynamoDbEndpoint (VPC endpoint policy))`);
    // the same call made by Lambda itself (no route through the VPC) meets no endpoint
    assert.equal((await authorizer.authorize(worker, { action: 'dynamodb:BatchGetItem', resource: table('control') })).allowed, true);
    assert.deepEqual(authorizer.summary().byAction['dynamodb:BatchGetItem'], { allowed: 1, refused: 1 });
  });

  it('an explicit deny in the resource policy wins over the role\'s allow and is named by its Sid; a revoked grant is missing', async () => {
    const tlsOnly = { name: 'JobsQueuePolicy', policy: { Version: '2012-10-17', Statement: [{ Sid: 'NoPlainText', Effect: 'Deny', Principal: { AWS: '*' }, Action: 'sqs:*', Resource: QUEUE, Condition: { Bool: { 'aws:SecureTransport': 'true' } } }] } };
    const denied = await new Authorizer({ iam: iam({ resourcePolicies: new Map([[QUEUE, tlsOnly]]) }), accountId: '000000000000' }).authorize(worker, { action: 'sqs:SendMessage', resource: QUEUE });
    assert.equal(denied.allowed, false);
    assert.match(denied.reason, /with an explicit deny in a resource-based policy \(statement NoPlainText of /);
    const revoking = new Authorizer({ iam: iam(), accountId: '000000000000' });
    assert.equal((await revoking.authorize(worker, { action: 'sqs:SendMessage', resource: QUEUE })).allowed, true);
    revoking.revoke('sqs:SendMessage');
    const revoked = await revoking.authorize(worker, { action: 'sqs:SendMessage', resource: QUEUE });
    assert.equal(revoked.allowed, false);
    assert.match(revoked.reason, /because no identity-based policy allows the sqs:SendMessage action/);
  });

  it('a service publishes only where the topic policy allows it, for this account\'s sources', async () => {
    const topicPolicy = { name: 'AlarmsPolicy', policy: { Version: '2012-10-17', Statement: [{
      Sid: 'CloudWatchAlarmsPublish', Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish', Resource: TOPIC,
      Condition: { StringEquals: { 'aws:SourceAccount': '000000000000' }, ArnLike: { 'aws:SourceArn': 'arn:aws:cloudwatch:us-east-1:000000000000:alarm:*' } },
    }] } };
    const authorizer = new Authorizer({ iam: iam({ resourcePolicies: new Map([[TOPIC, topicPolicy]]) }), accountId: '000000000000' });
    const alarm = (sourceArn: string): CallPrincipal => ({ kind: 'service', service: 'cloudwatch.amazonaws.com', sourceArn });
    assert.equal((await authorizer.authorize(alarm('arn:aws:cloudwatch:us-east-1:000000000000:alarm:dlq'), { action: 'sns:Publish', resource: TOPIC })).allowed, true);
    assert.equal((await authorizer.authorize(alarm('arn:aws:events:us-east-1:000000000000:rule/other'), { action: 'sns:Publish', resource: TOPIC })).allowed, false, 'not an alarm');
    const none = await new Authorizer({ iam: iam(), accountId: '000000000000' }).authorize(alarm('arn:aws:cloudwatch:us-east-1:000000000000:alarm:dlq'), { action: 'sns:Publish', resource: TOPIC });
    assert.equal(none.allowed, false, 'a service has no identity policy: without the topic policy\'s allow, nothing allows it');
  });
});
