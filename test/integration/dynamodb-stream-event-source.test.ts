import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand, DeleteItemCommand, DescribeTableCommand, PutItemCommand, UpdateItemCommand, UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  startDynamoDbStreamEventSource, type DynamoDbStreamEventSourceOptions, type StreamInvocationSummary,
} from '../../local/lambda/dynamodb-stream-event-source.ts';
import type { StreamInvocationRecord } from '../../local/lambda/dynamodb-stream-records.ts';
import { useEngines } from '../helpers/engines.ts';
import { waitFor } from '../helpers/wait.ts';

// The stream event source mapping emulation against real DynamoDB Local streams: what the stream
// returns, in which order and with which sequence numbers, is DynamoDB Local's doing, not a fake's.
describe('DynamoDB stream event source mapping emulation', () => {
  const local = useEngines();
  const functionName = 'ballast-stream-test';

  /** A fresh table with a NEW_AND_OLD_IMAGES stream; returns the stream's ARN. */
  async function createStreamTable(name: string): Promise<string> {
    await local.dynamodb.send(new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }));
    const { Table } = await local.dynamodb.send(new DescribeTableCommand({ TableName: name }));
    assert.ok(Table?.LatestStreamArn, 'table has a stream');
    return Table.LatestStreamArn;
  }

  async function put(table: string, ...keys: string[]): Promise<void> {
    for (const pk of keys) await local.dynamodb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, version: { N: '1' } } }));
  }

  async function createQueue(name: string): Promise<string> {
    const { QueueUrl } = await local.sqs.send(new CreateQueueCommand({ QueueName: name }));
    assert.ok(QueueUrl, 'queue created');
    return QueueUrl;
  }

  /** Receives one message within `timeoutMs` (long polls of 1 s): every wait in these tests is bounded. */
  async function receiveOne(queueUrl: string, timeoutMs = 8_000): Promise<string> {
    const deadlineMs = Date.now() + timeoutMs;
    while (Date.now() < deadlineMs) {
      const { Messages = [] } = await local.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
      if (Messages[0]?.Body) return Messages[0].Body;
    }
    return assert.fail(`no message on ${queueUrl} within ${timeoutMs} ms`);
  }

  const keyOf = (record: DynamoDBRecord) => record.dynamodb?.Keys?.pk?.S ?? '?';

  /**
   * Starts an event source reading the stream from TRIM_HORIZON whose handler records every batch
   * (by key) before running `behaviour`; it is stopped after the test, pass or fail.
   */
  function startRecording(
    t: TestContext,
    streamArn: string,
    behaviour: (event: DynamoDBStreamEvent, context: Context) => Promise<unknown> = async () => ({}),
    options: Partial<DynamoDbStreamEventSourceOptions> = {},
  ) {
    const batches: string[][] = [];
    const events: DynamoDBStreamEvent[] = [];
    const summaries: StreamInvocationSummary[] = [];
    const errors: unknown[] = [];
    const source = startDynamoDbStreamEventSource({
      streams: local.streams,
      streamArn,
      functionName,
      functionTimeoutMs: 5_000,
      startingPosition: 'TRIM_HORIZON',
      pollIntervalMs: 50,
      onInvocation: (summary) => summaries.push(summary),
      onError: (error) => errors.push(error),
      ...options,
      handler: async (event, context) => {
        batches.push(event.Records.map(keyOf));
        events.push(event);
        return behaviour(event, context);
      },
    });
    t.after(() => source.stop({ graceMs: 0 }));
    return { source, batches, events, summaries, errors };
  }

  it('rejects a configuration AWS would reject, naming the field', async () => {
    // GIVEN a stream
    const streamArn = await createStreamTable('invalid-config');
    const base = { streams: local.streams, streamArn, functionName, functionTimeoutMs: 1_000, handler: async () => ({}) };
    // WHEN batch size, retries, record age or the ARN are out of AWS's ranges, THEN starting throws
    assert.throws(() => startDynamoDbStreamEventSource({ ...base, batchSize: 10_001 }), /batchSize must be an integer from 1 to 10000; got 10001/);
    assert.throws(() => startDynamoDbStreamEventSource({ ...base, maximumRetryAttempts: -2 }), /maximumRetryAttempts/);
    assert.throws(() => startDynamoDbStreamEventSource({ ...base, maximumRecordAgeSeconds: 30 }), /maximumRecordAgeSeconds must be -1 or at least 60; got 30/);
    assert.throws(() => startDynamoDbStreamEventSource({ ...base, streamArn: 'arn:aws:sqs:us-east-1:000000000000:q' }), /LatestStreamArn/);
    // AND a short record age is accepted only when a test asks for it explicitly
    const short = startDynamoDbStreamEventSource({ ...base, maximumRecordAgeSeconds: 30, allowShortRecordAge: true });
    await short.stop({ graceMs: 0 });
  });

  it('delivers INSERT, MODIFY and REMOVE in order, in batches, with the Lambda record shape', async (t) => {
    // GIVEN an item inserted (with a binary attribute), modified and removed, then two more inserted
    const streamArn = await createStreamTable('shape');
    await local.dynamodb.send(new PutItemCommand({ TableName: 'shape', Item: { pk: { S: 'a' }, version: { N: '1' }, blob: { B: Buffer.from('hi') } } }));
    await local.dynamodb.send(new UpdateItemCommand({
      TableName: 'shape', Key: { pk: { S: 'a' } }, UpdateExpression: 'SET version = :v', ExpressionAttributeValues: { ':v': { N: '2' } },
    }));
    await local.dynamodb.send(new DeleteItemCommand({ TableName: 'shape', Key: { pk: { S: 'a' } } }));
    await put('shape', 'b', 'c');
    // WHEN the event source reads the stream in batches of two
    const run = startRecording(t, streamArn, undefined, { batchSize: 2 });
    await run.source.idle(10_000);
    // THEN the changes arrived in order, two at a time
    assert.deepEqual(run.batches, [['a', 'a'], ['a', 'b'], ['c']]);
    const records = run.events.flatMap((event) => event.Records);
    assert.deepEqual(records.map((record) => record.eventName), ['INSERT', 'MODIFY', 'REMOVE', 'INSERT', 'INSERT']);
    const sequenceNumbers = records.map((record) => BigInt(record.dynamodb?.SequenceNumber ?? '0'));
    assert.deepEqual(sequenceNumbers, [...sequenceNumbers].sort((x, y) => (x < y ? -1 : 1)), 'sequence numbers increase');
    // AND each record has Lambda's shape: images as attribute-value JSON, binary as base64, epoch seconds
    const [insert, modify, remove] = records;
    assert.equal(insert?.eventSource, 'aws:dynamodb');
    assert.equal(insert?.eventVersion, '1.1');
    assert.equal(insert?.awsRegion, 'us-east-1');
    assert.equal(insert?.eventSourceARN, streamArn);
    assert.match(insert?.eventID ?? '', /.+/);
    assert.deepEqual(insert?.dynamodb?.Keys, { pk: { S: 'a' } });
    assert.deepEqual(insert?.dynamodb?.NewImage, { pk: { S: 'a' }, version: { N: '1' }, blob: { B: Buffer.from('hi').toString('base64') } });
    assert.equal(insert?.dynamodb?.OldImage, undefined);
    assert.equal(insert?.dynamodb?.StreamViewType, 'NEW_AND_OLD_IMAGES');
    assert.equal(typeof insert?.dynamodb?.SizeBytes, 'number');
    const createdAtSeconds = insert?.dynamodb?.ApproximateCreationDateTime ?? 0;
    assert.ok(Number.isInteger(createdAtSeconds) && Math.abs(Date.now() / 1_000 - createdAtSeconds) < 120, `epoch seconds: ${createdAtSeconds}`);
    assert.equal(modify?.dynamodb?.OldImage?.version?.N, '1');
    assert.equal(modify?.dynamodb?.NewImage?.version?.N, '2');
    assert.equal(remove?.dynamodb?.OldImage?.version?.N, '2');
    assert.equal(remove?.dynamodb?.NewImage, undefined);
    assert.equal(run.source.stats().recordsProcessed, 5);
    assert.equal(run.source.stats().shards[0]?.checkpoint, records.at(-1)?.dynamodb?.SequenceNumber);
    assert.deepEqual(run.errors, []);
  });

  it('starts at LATEST by default: changes made before the mapping started are not delivered', async (t) => {
    // GIVEN a change made before the event source starts at the default position
    const streamArn = await createStreamTable('latest');
    await put('latest', 'before');
    const run = startRecording(t, streamArn, undefined, { startingPosition: undefined });
    await run.source.idle(10_000);
    // WHEN another change is made after it caught up
    await put('latest', 'after');
    await run.source.idle(10_000);
    // THEN only the later change was delivered
    assert.deepEqual(run.batches, [['after']]);
  });

  it('gathers records for maximumBatchingWindowMs before invoking', async (t) => {
    // GIVEN a 1 s batching window and one change before the event source starts
    const streamArn = await createStreamTable('window');
    await put('window', 'w1');
    const startedAtMs = Date.now();
    let invokedAtMs = 0;
    const run = startRecording(t, streamArn, async () => {
      invokedAtMs = Date.now();
      return {};
    }, { maximumBatchingWindowMs: 1_000 });
    // WHEN a second change follows 200 ms later
    await sleep(200);
    await put('window', 'w2');
    await run.source.idle(10_000);
    // THEN both arrived in one invocation, made only once the window had closed
    assert.deepEqual(run.batches, [['w1', 'w2']]);
    assert.ok(invokedAtMs - startedAtMs >= 950, `invoked ${invokedAtMs - startedAtMs} ms after start`);
  });

  it('reads a shard that closes (stream disabled) to its end, then finishes it', async (t) => {
    // GIVEN a stream being read, with one change delivered
    const streamArn = await createStreamTable('closing');
    await put('closing', 'c1');
    const run = startRecording(t, streamArn);
    await run.source.idle(10_000);
    // WHEN another change is made and the stream is disabled, which closes its shard
    await put('closing', 'c2');
    await local.dynamodb.send(new UpdateTableCommand({ TableName: 'closing', StreamSpecification: { StreamEnabled: false } }));
    // THEN the last change is delivered and the shard is finished (GetRecords gave no next iterator)
    await waitFor('the shard to finish', () => run.source.stats().shards[0]?.state === 'finished');
    assert.deepEqual(run.batches, [['c1'], ['c2']]);
    await run.source.idle(1_000);
  });

  it('retries from the lowest failed record of a partial batch failure; records before it are not redelivered', async (t) => {
    // GIVEN five changes and a handler that, the first time, reports the 4th and the 3rd as failed
    const streamArn = await createStreamTable('partial');
    await put('partial', 'r1', 'r2', 'r3', 'r4', 'r5');
    const run = startRecording(t, streamArn, async (event) => (run.batches.length > 1 ? {} : {
      batchItemFailures: [3, 2].map((index) => ({ itemIdentifier: event.Records[index]?.dynamodb?.SequenceNumber })),
    }));
    // WHEN the stream has been drained
    await run.source.idle(10_000);
    // THEN the retry started at the lowest failed record and included the rest of the batch, as on AWS
    assert.deepEqual(run.batches, [['r1', 'r2', 'r3', 'r4', 'r5'], ['r3', 'r4', 'r5']]);
    assert.deepEqual(run.summaries.map((summary) => summary.next), ['retry', 'checkpoint']);
    assert.equal(run.source.stats().recordsProcessed, 5);
  });

  it('retries the whole batch when batchItemFailures names a record that is not in it', async (t) => {
    // GIVEN two changes and a handler that, the first time, reports an unknown itemIdentifier
    const streamArn = await createStreamTable('unknown-item');
    await put('unknown-item', 'x', 'y');
    const run = startRecording(t, streamArn, async () => (run.batches.length > 1 ? {} : { batchItemFailures: [{ itemIdentifier: '42' }] }));
    // WHEN the stream has been drained
    await run.source.idle(10_000);
    // THEN the whole batch was delivered again
    assert.deepEqual(run.batches, [['x', 'y'], ['x', 'y']]);
  });

  it('retries a batch that timed out, and checkpoints nothing for it', async (t) => {
    // GIVEN a 300 ms function timeout and a handler that, the first time, needs 600 ms
    const streamArn = await createStreamTable('timeout');
    await put('timeout', 'slow');
    const run = startRecording(t, streamArn, async () => {
      if (run.batches.length === 1) await sleep(600);
      return {};
    }, { functionTimeoutMs: 300 });
    // WHEN the stream has been drained
    await run.source.idle(10_000);
    // THEN the batch was delivered again after the timeout
    assert.deepEqual(run.summaries.map((summary) => [summary.outcome, summary.next]), [['timeout', 'retry'], ['ok', 'checkpoint']]);
  });

  it('bisects a failing batch to isolate a poison record, reports it after its retries to the on-failure queue, and processes the rest', async (t) => {
    // GIVEN four changes, the third of which always makes the handler throw, and an on-failure queue
    const streamArn = await createStreamTable('poison');
    const queueUrl = await createQueue('stream-failures');
    await put('poison', 'ok-1', 'ok-2', 'poison', 'ok-4');
    const run = startRecording(t, streamArn, async (event) => {
      if (event.Records.some((record) => keyOf(record) === 'poison')) throw new Error('poison record');
      return {};
    }, { batchSize: 4, bisectBatchOnFunctionError: true, maximumRetryAttempts: 2, onFailure: { sqs: local.sqs, queueUrl } });
    // WHEN the stream has been drained
    await run.source.idle(15_000);
    // THEN bisection narrowed the failure down to the poison record, which was tried 1 + 2 times on its own
    assert.deepEqual(run.batches, [
      ['ok-1', 'ok-2', 'poison', 'ok-4'], ['ok-1', 'ok-2'], ['poison', 'ok-4'], ['poison'], ['poison'], ['poison'], ['ok-4'],
    ]);
    assert.deepEqual(run.summaries.map((summary) => summary.next), ['bisect', 'checkpoint', 'bisect', 'retry', 'retry', 'discard', 'checkpoint']);
    const stats = run.source.stats();
    assert.deepEqual([stats.bisections, stats.recordsProcessed, stats.recordsDiscarded, stats.errors], [2, 3, 1, 5]);
    // AND the on-failure queue got AWS's invocation record for it, describing the batch rather than carrying it
    const report = JSON.parse(await receiveOne(queueUrl)) as StreamInvocationRecord;
    const poison = run.events[3]?.Records[0];
    const lastTry = run.summaries[5];
    assert.deepEqual(report.requestContext, {
      requestId: lastTry?.awsRequestId,
      functionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 5,
    });
    assert.deepEqual(report.responseContext, { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' });
    assert.equal(report.version, '1.0');
    assert.match(report.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const { approximateArrivalOfFirstRecord, approximateArrivalOfLastRecord, ...batchInfo } = report.DDBStreamBatchInfo;
    assert.deepEqual(batchInfo, {
      shardId: stats.shards[0]?.shardId,
      startSequenceNumber: poison?.dynamodb?.SequenceNumber,
      endSequenceNumber: poison?.dynamodb?.SequenceNumber,
      batchSize: 1,
      streamArn,
    });
    assert.match(approximateArrivalOfFirstRecord, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(approximateArrivalOfLastRecord, approximateArrivalOfFirstRecord);
  });

  it('without bisection, skips the whole batch once maximumRetryAttempts is spent', async (t) => {
    // GIVEN two changes, a handler that always throws, one retry and an on-failure queue
    const streamArn = await createStreamTable('exhausted');
    const queueUrl = await createQueue('exhausted-failures');
    await put('exhausted', 'e1', 'e2');
    const run = startRecording(t, streamArn, async () => {
      throw new Error('always');
    }, { maximumRetryAttempts: 1, onFailure: { sqs: local.sqs, queueUrl } });
    // WHEN the stream has been drained
    await run.source.idle(10_000);
    // THEN the batch was tried twice and then reported as a whole
    assert.deepEqual(run.batches, [['e1', 'e2'], ['e1', 'e2']]);
    const report = JSON.parse(await receiveOne(queueUrl)) as StreamInvocationRecord;
    assert.equal(report.requestContext.condition, 'RetryAttemptsExhausted');
    assert.equal(report.requestContext.approximateInvokeCount, 2);
    assert.equal(report.DDBStreamBatchInfo.batchSize, 2);
    assert.deepEqual([report.DDBStreamBatchInfo.startSequenceNumber, report.DDBStreamBatchInfo.endSequenceNumber],
      run.events[0]?.Records.map((record) => record.dynamodb?.SequenceNumber));
  });

  it('reports records older than maximumRecordAgeSeconds to the on-failure queue instead of retrying them forever', async (t) => {
    // GIVEN two changes, a handler that always throws, unlimited retries and a 1 s record age (test-only)
    const streamArn = await createStreamTable('too-old');
    const queueUrl = await createQueue('too-old-failures');
    await put('too-old', 'o1', 'o2');
    const startedAtMs = Date.now();
    const run = startRecording(t, streamArn, async () => {
      throw new Error('always');
    }, { maximumRecordAgeSeconds: 1, allowShortRecordAge: true, pollIntervalMs: 200, onFailure: { sqs: local.sqs, queueUrl } });
    // WHEN the records have aged past the limit
    const report = JSON.parse(await receiveOne(queueUrl)) as StreamInvocationRecord;
    await run.source.idle(10_000);
    // THEN they were retried until then, and reported as too old rather than exhausted
    assert.equal(report.requestContext.condition, 'RecordAgeExceeded');
    assert.equal(report.DDBStreamBatchInfo.batchSize, 2);
    assert.equal(report.requestContext.approximateInvokeCount, run.batches.length);
    assert.ok(Date.now() - startedAtMs >= 1_000, 'not reported before the records were a second old');
    assert.ok(run.batches.length >= 2 && run.batches.length <= 8, `retried for about a second: ${run.batches.length} invocations`);
    assert.deepEqual(run.source.stats().recordsDiscarded, 2);
  });

  it('stop() lets an in-flight invocation finish and checkpoints it', async (t) => {
    // GIVEN an invocation that is 400 ms from finishing
    const streamArn = await createStreamTable('graceful');
    await put('graceful', 'in-flight');
    const run = startRecording(t, streamArn, async () => sleep(400).then(() => ({})));
    await waitFor('the invocation to start', () => run.batches.length === 1);
    // WHEN the event source is stopped with enough grace
    await run.source.stop({ graceMs: 5_000 });
    // THEN stop() waited for it, and the shard was checkpointed past its record
    assert.deepEqual(run.summaries.map((summary) => [summary.outcome, summary.next]), [['ok', 'checkpoint']]);
    const stats = run.source.stats();
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.shards[0]?.checkpoint, run.events[0]?.Records[0]?.dynamodb?.SequenceNumber);
    await assert.rejects(run.source.idle(100), /stopped/);
  });

  it('stop() abandons an invocation that outlives the grace period, checkpointing nothing for it', async (t) => {
    // GIVEN an invocation that needs 1.5 s more
    const streamArn = await createStreamTable('abandoned');
    await put('abandoned', 'too-slow');
    const run = startRecording(t, streamArn, async () => sleep(1_500).then(() => ({})));
    await waitFor('the invocation to start', () => run.batches.length === 1);
    // WHEN the event source is stopped with 100 ms of grace
    const stoppingAtMs = Date.now();
    await run.source.stop({ graceMs: 100 });
    // THEN stop() returned soon and the record stays unprocessed
    assert.ok(Date.now() - stoppingAtMs < 1_000, 'stop() did not wait for the handler');
    assert.deepEqual(run.summaries.map((summary) => [summary.outcome, summary.next]), [['abandoned', 'none']]);
    assert.equal(run.source.stats().shards[0]?.checkpoint, undefined);
  });
});
