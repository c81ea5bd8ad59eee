import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { askingConsumedCapacity, dynamoDbDatapoints, withoutConsumedCapacity, type DynamoDbExchange } from '../../local/cloudwatch/index.ts';

/** The datapoints of one exchange as `Name{Dim=value,...}=value`, sorted, for readable comparisons. */
function points(exchange: Partial<DynamoDbExchange> & Pick<DynamoDbExchange, 'operation' | 'request'>): string[] {
  return dynamoDbDatapoints({ status: 200, response: {}, latencyMs: 4, ...exchange })
    .map(({ identity, value }) => `${identity.name}{${Object.entries(identity.dimensions).map(([k, v]) => `${k}=${v}`).join(',')}}=${value}`)
    .sort();
}

const transaction = {
  TransactItems: [
    { Put: { TableName: 'state', Item: {} } },
    { Update: { TableName: 'arn:aws:dynamodb:eu-west-1:123456789012:table/control', Key: {} } },
    { ConditionCheck: { TableName: 'state', Key: {} } },
  ],
};

describe('AWS/DynamoDB datapoints from one request and its answer', () => {
  it('a success: one latency sample per table it names (ARNs read as names), and the units each table consumed, by kind', () => {
    assert.deepEqual(points({
      operation: 'TransactWriteItems', request: transaction,
      response: { ConsumedCapacity: [{ TableName: 'state', CapacityUnits: 4, WriteCapacityUnits: 4 }, { TableName: 'control', CapacityUnits: 2, WriteCapacityUnits: 2 }] },
    }), [
      'ConsumedWriteCapacityUnits{TableName=control}=2', 'ConsumedWriteCapacityUnits{TableName=state}=4',
      'SuccessfulRequestLatency{TableName=control,Operation=TransactWriteItems}=4', 'SuccessfulRequestLatency{TableName=state,Operation=TransactWriteItems}=4',
    ]);
    assert.deepEqual(points({
      operation: 'BatchGetItem', request: { RequestItems: { a: {}, b: {} } },
      response: { ConsumedCapacity: [{ TableName: 'a', CapacityUnits: 0.5 }, { TableName: 'b', CapacityUnits: 1 }] },
    }), [
      'ConsumedReadCapacityUnits{TableName=a}=0.5', 'ConsumedReadCapacityUnits{TableName=b}=1',
      'SuccessfulRequestLatency{TableName=a,Operation=BatchGetItem}=4', 'SuccessfulRequestLatency{TableName=b,Operation=BatchGetItem}=4',
    ]);
    assert.deepEqual(points({ operation: 'PutItem', request: { TableName: 't' }, response: { ConsumedCapacity: { TableName: 't', CapacityUnits: 3 } } }),
      ['ConsumedWriteCapacityUnits{TableName=t}=3', 'SuccessfulRequestLatency{TableName=t,Operation=PutItem}=4']);
  });

  it('a 5xx is a SystemError of each table and the operation; a throttle a read or write throttle event of each table', () => {
    assert.deepEqual(points({ operation: 'TransactWriteItems', request: transaction, status: 500, response: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' } }),
      ['SystemErrors{TableName=control,Operation=TransactWriteItems}=1', 'SystemErrors{TableName=state,Operation=TransactWriteItems}=1']);
    for (const type of ['com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', 'com.amazon.coral.availability#ThrottlingException', 'RequestLimitExceeded']) {
      assert.deepEqual(points({ operation: 'GetItem', request: { TableName: 't' }, status: 400, response: { __type: type } }), ['ReadThrottleEvents{TableName=t}=1'], type);
      assert.deepEqual(points({ operation: 'UpdateItem', request: { TableName: 't' }, status: 400, response: { __type: type } }), ['WriteThrottleEvents{TableName=t}=1'], type);
    }
  });

  it('other client errors, table management and PartiQL give nothing', () => {
    assert.deepEqual(points({ operation: 'PutItem', request: { TableName: 't' }, status: 400, response: { __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException' } }), []);
    assert.deepEqual(points({ operation: 'DescribeTable', request: { TableName: 't' } }), []);
    assert.deepEqual(points({ operation: 'ExecuteStatement', request: { Statement: 'SELECT * FROM t' } }), []);
  });

  it('asks for the consumed capacity only where the caller did not, and hands back the answer without it', () => {
    assert.deepEqual(askingConsumedCapacity('GetItem', { TableName: 't' }), { TableName: 't', ReturnConsumedCapacity: 'TOTAL' });
    assert.deepEqual(askingConsumedCapacity('GetItem', { TableName: 't', ReturnConsumedCapacity: 'NONE' }), { TableName: 't', ReturnConsumedCapacity: 'TOTAL' });
    assert.equal(askingConsumedCapacity('GetItem', { TableName: 't', ReturnConsumedCapacity: 'INDEXES' }), undefined);
    assert.equal(askingConsumedCapacity('DescribeTable', { TableName: 't' }), undefined);
    assert.deepEqual(withoutConsumedCapacity({ Item: { pk: { S: '1' } }, ConsumedCapacity: { TableName: 't', CapacityUnits: 1 } }), { Item: { pk: { S: '1' } } });
  });
});
