import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DescribeStreamCommand } from '@aws-sdk/client-dynamodb-streams';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { createInvalidationRepair, UNREADABLE_MESSAGE } from '../../functions/invalidation-repair/repair.ts';
import { streamInvocationRecord, type StreamInvocationRecord } from '../../local/lambda/dynamodb-stream-records.ts';
import { startLocalCloud } from '../../local/cloud/index.ts';
import { startRedis } from '../../local/engines/index.ts';
import { accountKey } from '../../workloads/accounts/index.ts';
import { entityCacheKeys, CACHE_METRICS, encodeValue, FILL_OUTCOMES } from '../../shared/cache/index.ts';
import { createObservability } from '../../shared/observability/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { RANGE_UNAVAILABLE } from '../../shared/streams/index.ts';
import { useCacheFixture } from '../helpers/cache-fixture.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { sqsRecord } from '../helpers/sqs-records.ts';
import { latestStreamArn, streamEventReader } from '../helpers/stream-events.ts';
import { waitFor } from '../helpers/wait.ts';
import { accountEntity, toCachedAccount } from '../../workloads/accounts/index.ts';

type BatchInfo = StreamInvocationRecord['DDBStreamBatchInfo'];

describe('invalidation repair: the invalidator\'s on-failure queue, drained', () => {
  const f = useCacheFixture();

  /** The repair as its entry point composes it, with its own metrics so each test reads only its own. */
  function repair(cacheOptions: Parameters<typeof f.cache>[0] = {}) {
    const observability = createObservability({ workerVersion: 'repair-test' });
    return createInvalidationRepair({ streams: f.local.streams, cache: f.cache({ observability, ...cacheOptions }), observability });
  }

  /** The message Lambda sends to the on-failure queue for a stream batch of `records`, with the real shard id. */
  async function failedBatch(
    records: readonly DynamoDBRecord[], adjust: (info: BatchInfo) => BatchInfo = (info) => info, tableName = f.stateTable,
  ): Promise<SQSRecord> {
    const sequenceNumbers = records.map((record) => record.dynamodb?.SequenceNumber ?? '');
    const streamArn = await latestStreamArn(f.local.dynamodb, tableName);
    const { StreamDescription } = await f.local.streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const first = BigInt(sequenceNumbers[0] ?? '0');
    const shard = StreamDescription?.Shards?.find(({ SequenceNumberRange: range }) =>
      BigInt(range?.StartingSequenceNumber ?? '0') <= first && (!range?.EndingSequenceNumber || BigInt(range.EndingSequenceNumber) >= first));
    assert.ok(shard?.ShardId, `no shard holds sequence number ${first}`);
    const record = streamInvocationRecord({
      condition: 'RetryAttemptsExhausted',
      lastInvocation: { requestId: randomUUID(), outcome: 'ok' },
      fallbackRequestId: randomUUID(),
      functionArn: 'arn:aws:lambda:ddblocal:000000000000:function:cache-invalidator',
      approximateInvokeCount: 11,
      timestampMs: Date.now(),
      shardId: shard.ShardId,
      streamArn,
      records: records.map((r, index) => ({ sequenceNumber: sequenceNumbers[index] ?? '', arrivalMs: (r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1_000 })),
    });
    return sqsRecord(JSON.stringify({ ...record, DDBStreamBatchInfo: adjust(record.DDBStreamBatchInfo) }));
  }

  /** Accounts committed at v2 whose invalidations were lost: their cache entries still hold v1. Returns the v2 stream records. */
  async function staleAccounts(ids: readonly string[]): Promise<DynamoDBRecord[]> {
    const stream = await f.streamReader();
    const v1 = [];
    for (const id of ids) v1.push(toCachedAccount(await f.createAccount(id, 10)));
    await stream.next({ minRecords: ids.length });
    for (const id of ids) await f.changeAccount(id, 5);
    const { Records } = await stream.next({ minRecords: ids.length });
    for (const account of v1) {
      assert.equal(await f.plant(entityCacheKeys('account', account.accountId, 1), 1, encodeValue(account)), FILL_OUTCOMES.stored);
    }
    return Records;
  }

  it('reads the failed batch back from the stream and tombstones every stale entry with the new version', async () => {
    // GIVEN three accounts at v2 whose v1 entries are still cached (the batch of their v2 commits failed),
    // and a later commit of one of them that is not part of that batch
    const ids = ['acc-rep-1', 'acc-rep-2', 'acc-rep-3'];
    const failed = await staleAccounts(ids);
    assert.deepEqual(failed.map((record) => record.eventName), ['MODIFY', 'MODIFY', 'MODIFY']);
    await f.changeAccount('acc-rep-1', 1);
    // WHEN the batch's on-failure record reaches the repair
    const message = await failedBatch(failed);
    const { value: response, output } = await captureOutput(() => repair()({ Records: [message] }));
    // THEN nothing is reported, and exactly the batch's three records were applied
    assert.deepEqual(response, { batchItemFailures: [] });
    assert.equal(metricTotal(output, CACHE_METRICS.invalidationsRepaired), 3);
    assert.equal(metricTotal(output, CACHE_METRICS.invalidations), 3);
    assert.equal(metricTotal(output, CACHE_METRICS.invalidationRepairFallbacks), 0);
    assert.ok(output.logs.some((log) => log.message === 'failed stream batch applied again' && log.messageId === message.messageId && log.records === 3));
    // AND every stale entry is gone, tombstoned with the batch's version (2, not the later 3: the range is bounded)
    const redis = await f.redis();
    for (const id of ids) {
      assert.equal(await redis.exists(entityCacheKeys('account', id, 1).value), 0, `${id}: the stale v1 entry is deleted`);
      assert.equal(await redis.get(entityCacheKeys('account', id, 1).tombstone), '2', `${id}: tombstone`);
    }
    // AND later reads return the table's version
    const cache = f.cache();
    assert.deepEqual(await Promise.all(ids.map(async (id) => (await cache.get(accountEntity, id)).value?.version)), [3, 2, 2]);
    // AND delivering the same message again changes nothing (SQS is at least once)
    assert.deepEqual(await repair()({ Records: [message] }), { batchItemFailures: [] });
    assert.equal((await cache.get(accountEntity, 'acc-rep-2')).source, 'hit');
  });

  it('falls back to one full reconcile when the batch cannot be read back: shard gone, sequence number refused, unreadable message', async () => {
    // GIVEN stale entries, a healthy one, and three messages whose records the stream cannot give back
    const failed = await staleAccounts(['acc-fb-1', 'acc-fb-2']);
    await f.createAccount('acc-fb-fresh', 7);
    const cache = f.cache();
    assert.equal((await cache.get(accountEntity, 'acc-fb-fresh')).source, 'miss', 'filled with its current version');
    const unknownShard = await failedBatch(failed, (info) => ({ ...info, shardId: 'shardId-00000000000000000000-deadbeef' }));
    const beforeShard = await failedBatch(failed, (info) => ({ ...info, startSequenceNumber: '0'.repeat(21) }));
    const unreadable = sqsRecord('{"DDBStreamBatchInfo": {"shardId": "s"}}');
    // WHEN they reach the repair in one invocation
    const { value: response, output } = await captureOutput(() => repair()({ Records: [unknownShard, beforeShard, unreadable] }));
    // THEN none is reported: each was repaired by the fallback, counted and logged with its reason
    assert.deepEqual(response, { batchItemFailures: [] });
    for (const reason of [RANGE_UNAVAILABLE.gone, RANGE_UNAVAILABLE.invalid, UNREADABLE_MESSAGE]) {
      assert.equal(metricTotal(output, CACHE_METRICS.invalidationRepairFallbacks, { reason }), 1, reason);
      assert.ok(output.logs.some((log) => log.message === 'failed stream batch repaired by a full cache reconcile' && log.reason === reason), reason);
    }
    assert.equal(metricTotal(output, CACHE_METRICS.invalidationsRepaired), 0);
    // AND the stale entries now hold the table's version, through one reconcile shared by the three
    const reports = output.logs.filter((log) => log.message === 'failed stream batch repaired by a full cache reconcile');
    assert.equal(new Set(reports.map((log) => JSON.stringify([log.sampled, log.mismatches, log.repaired]))).size, 1, 'one report for all three');
    assert.ok(Number(reports[0]?.repaired) >= 2);
    const redis = await f.redis();
    for (const id of ['acc-fb-1', 'acc-fb-2']) {
      assert.equal(await redis.hget(entityCacheKeys('account', id, 1).value, 'version'), '2', `${id}: refilled from the table`);
      assert.deepEqual([(await cache.get(accountEntity, id)).source, (await cache.get(accountEntity, id)).value?.version], ['hit', 2], id);
    }
    assert.equal((await cache.get(accountEntity, 'acc-fb-fresh')).source, 'hit', 'the healthy entry was left alone');
  });

  it('runs in the local cloud: the stack\'s repair function is mapped to the on-failure queue and drains it', async () => {
    // GIVEN the shipped stack on the engines, and a commit on its state table
    const lines: { functionName: string; log: Record<string, unknown> }[] = [];
    const cloud = await startLocalCloud({
      engines: f.local.engines,
      onLog: (line, functionName) => {
        try {
          lines.push({ functionName, log: JSON.parse(line) as Record<string, unknown> });
        } catch {
          // not a JSON line
        }
      },
    });
    try {
      const { outputs, functions, mappings, queues } = cloud.resources;
      const repairFunction = functions.find((fn) => fn.name === outputs.InvalidationRepairFunctionName);
      const failures = queues.find((queue) => queue.url === outputs.InvalidatorFailureQueueUrl);
      assert.ok(repairFunction && failures, `functions: ${functions.map((fn) => fn.name).join(', ')}`);
      assert.ok(mappings.some((m) => m.functionName === repairFunction.name && m.eventSourceArn === failures.arn));
      const tableName = outputs.StateTableName as string;
      const stream = await streamEventReader(f.local.dynamodb, f.local.streams, tableName);
      await f.local.documents.send(new PutCommand({
        TableName: tableName, Item: { pk: accountKey('acc-cloud'), accountId: 'acc-cloud', balance: 1, version: 1, updatedAt: new Date().toISOString() },
      }));
      const { Records } = await stream.next();
      // WHEN the invocation records of a batch still in the stream and of one that is not reach the queue
      const readable = await failedBatch(Records, undefined, tableName);
      const gone = await failedBatch(Records, (info) => ({ ...info, shardId: 'shardId-00000000000000000000-c0ffee00' }), tableName);
      await f.local.sqs.send(new SendMessageBatchCommand({
        QueueUrl: failures.url, Entries: [readable, gone].map((message, index) => ({ Id: String(index), MessageBody: message.body })),
      }));
      // THEN the repair function applies the first, reconciles for the second, and the queue drains
      const logged = (message: string) => lines.some(({ functionName, log }) => functionName === repairFunction.name && log.message === message);
      await waitFor('the repair to apply the readable batch', () => logged('failed stream batch applied again'), 20_000, 100);
      await waitFor('the repair to reconcile for the gone batch', () => logged('failed stream batch repaired by a full cache reconcile'), 20_000, 100);
      await waitFor('the on-failure queue to drain', async () => {
        const counts = await queueCounts(f.local.sqs, failures.url);
        return counts.visible + counts.inFlight === 0;
      }, 20_000, 100);
    } finally {
      await cloud.stop({ graceMs: 1_000 });
    }
  });

  it('starts no message the invocation has no time left for: those are reported, not cut off by the timeout', async () => {
    // GIVEN two failed batches and an invocation with 5 s left (the repair wants 10 s to start one)
    const failed = await staleAccounts(['acc-late-1']);
    const messages = [await failedBatch(failed), await failedBatch(failed)];
    // WHEN
    const { value: response, output } = await captureOutput(() => repair()({ Records: messages }, { getRemainingTimeInMillis: () => 5_000 }));
    // THEN both are reported untouched, for SQS to deliver again
    assert.deepEqual(response, { batchItemFailures: messages.map((message) => ({ itemIdentifier: message.messageId })) });
    assert.equal(metricTotal(output, CACHE_METRICS.invalidations), 0);
    assert.equal((await (await f.redis()).hget(entityCacheKeys('account', 'acc-late-1', 1).value, 'version')), '1', 'still the stale entry');
  });

  it('Redis down: every message is reported for redelivery, none is lost; after it returns, the redelivery repairs', async () => {
    // GIVEN a failed batch that is still in the stream and one that is not
    const failed = await staleAccounts(['acc-down-1', 'acc-down-2']);
    const readable = await failedBatch(failed);
    const gone = await failedBatch(failed, (info) => ({ ...info, shardId: 'shardId-00000000000000000000-0badf00d' }));
    // WHEN Redis is down while the repair runs
    await f.local.engines.redis.stop();
    const repairWhileDown = repair({ connectWaitMs: 500 });
    const { value: response, output } = await captureOutput(() => repairWhileDown({ Records: [readable, gone] }));
    // THEN both messages are reported (SQS delivers them again; past maxReceiveCount, the DLQ keeps them)
    assert.deepEqual(response, { batchItemFailures: [{ itemIdentifier: readable.messageId }, { itemIdentifier: gone.messageId }] });
    assert.equal(metricTotal(output, CACHE_METRICS.invalidationsRepaired), 0);
    assert.ok(output.logs.some((log) => log.message === 'failed stream batch still cannot be applied; the message will be delivered again'
      && log.messageId === readable.messageId));
    assert.ok(output.logs.some((log) => log.message === 'invalidation repair failed; the message will be delivered again' && log.messageId === gone.messageId));

    // WHEN Redis returns on the same port and SQS delivers the messages again
    const restarted = await startRedis({ port: f.local.engines.redis.port });
    try {
      // (SQS redelivers after the visibility timeout, long after the client's reconnect backoff,
      // capped at 2 s, has run out; here deliveries come every second, at most 6 times)
      let redelivered = await captureOutput(() => repairWhileDown({ Records: [readable, gone] }));
      for (let delivery = 2; delivery <= 6 && redelivered.value.batchItemFailures.length > 0; delivery += 1) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        redelivered = await captureOutput(() => repairWhileDown({ Records: [readable, gone] }));
      }
      // THEN both are repaired: the first from its records, the second by the full reconcile
      assert.deepEqual(redelivered.value, { batchItemFailures: [] });
      assert.equal(metricTotal(redelivered.output, CACHE_METRICS.invalidationsRepaired), 2);
      assert.equal(metricTotal(redelivered.output, CACHE_METRICS.invalidationRepairFallbacks, { reason: RANGE_UNAVAILABLE.gone }), 1);
      const cache = f.cache();
      for (const id of ['acc-down-1', 'acc-down-2']) assert.equal((await cache.get(accountEntity, id)).value?.version, 2, id);
    } finally {
      await restarted.stop();
    }
  });
});
