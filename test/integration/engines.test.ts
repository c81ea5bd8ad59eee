import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CreateTableCommand, DescribeTableCommand, PutItemCommand, TransactWriteItemsCommand, TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import { useEngines } from '../helpers/engines.ts';

// These tests prove each engine is the real thing: behaviour a hand-rolled fake would not have.
describe('local engines', () => {
  const local = useEngines();

  async function createTable(name: string, stream = false) {
    await local.dynamodb.send(new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      ...(stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } } : {}),
    }));
  }

  it('DynamoDB Local: a transaction with a failed condition returns its cancellation reasons', async () => {
    // GIVEN an item that exists
    await createTable('txn');
    await local.dynamodb.send(new PutItemCommand({ TableName: 'txn', Item: { pk: { S: 'a' }, n: { N: '1' } } }));
    // WHEN a transaction requires it not to exist
    const error = await local.dynamodb.send(new TransactWriteItemsCommand({
      TransactItems: [
        { Put: { TableName: 'txn', Item: { pk: { S: 'b' } } } },
        {
          Put: {
            TableName: 'txn', Item: { pk: { S: 'a' }, n: { N: '2' } },
            ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
      ],
    })).catch((caught: unknown) => caught);
    // THEN it is cancelled with one reason per item, the old item attached to the failed one
    assert.ok(error instanceof TransactionCanceledException, `expected TransactionCanceledException, got ${String(error)}`);
    assert.deepEqual(error.CancellationReasons?.map((reason) => reason.Code), ['None', 'ConditionalCheckFailed']);
    assert.equal(error.CancellationReasons?.[1]?.Item?.n?.N, '1');
  });

  it('DynamoDB Local: a stream on a table yields the INSERT record', async () => {
    await createTable('streamed', true);
    await local.dynamodb.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: 'x' }, v: { N: '7' } } }));
    const table = await local.dynamodb.send(new DescribeTableCommand({ TableName: 'streamed' }));
    const streamArn = table.Table?.LatestStreamArn;
    assert.ok(streamArn, 'table has a stream');
    const stream = await local.streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const shardId = stream.StreamDescription?.Shards?.[0]?.ShardId;
    assert.ok(shardId, 'stream has a shard');
    const { ShardIterator } = await local.streams.send(new GetShardIteratorCommand({
      StreamArn: streamArn, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON',
    }));
    const { Records } = await local.streams.send(new GetRecordsCommand({ ShardIterator }));
    assert.equal(Records?.[0]?.eventName, 'INSERT');
    assert.equal(Records?.[0]?.dynamodb?.NewImage?.v?.N, '7');
  });

  it('fauxqs: a queue with a redrive policy moves a message to its DLQ after maxReceiveCount receives', async () => {
    const dlq = await local.sqs.send(new CreateQueueCommand({ QueueName: 'jobs-dlq' }));
    const dlqArn = (await local.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] })))
      .Attributes?.QueueArn;
    const source = await local.sqs.send(new CreateQueueCommand({
      QueueName: 'jobs',
      Attributes: { VisibilityTimeout: '0', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }) },
    }));
    await local.sqs.send(new SendMessageCommand({ QueueUrl: source.QueueUrl, MessageBody: 'poison' }));

    const receiveFromSource = () => local.sqs.send(new ReceiveMessageCommand({ QueueUrl: source.QueueUrl, WaitTimeSeconds: 0 }));
    assert.equal((await receiveFromSource()).Messages?.length, 1, 'first receive');
    assert.equal((await receiveFromSource()).Messages?.length, 1, 'second receive');
    assert.equal((await receiveFromSource()).Messages, undefined, 'third receive finds the message gone');

    const moved = await local.sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(moved.Messages?.[0]?.Body, 'poison');
  });

  it('redis-server: runs a Lua script via EVAL', async () => {
    const redis = new Redis(local.env.BALLAST_CACHE_URL as string, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      const result = await redis.eval(
        "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[1], ARGV[2])", 1, 'counter', '40', '2',
      );
      assert.equal(result, 42);
    } finally {
      redis.disconnect();
    }
  });
});
