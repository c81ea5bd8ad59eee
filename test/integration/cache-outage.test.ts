import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { startRedis, type Engine } from '../../local/engines/index.ts';
import { startTcpFaultProxy } from '../../local/faults/tcp-proxy.ts';
import { createLambdaContext } from '../../local/lambda/context.ts';
import { connectCacheClient, entityCacheKeys, CACHE_METRICS, encodeValue, FILL_OUTCOMES, type EntityCacheKeys } from '../../shared/cache/index.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { useCacheFixture, waitFor } from '../helpers/cache-fixture.ts';
import { accountEntity, toCachedAccount } from '../../workloads/accounts/index.ts';

const getAccount = (id: string) => ({ rawPath: `/accounts/${id}`, requestContext: { http: { method: 'GET' } } }) as APIGatewayProxyEventV2;

describe('cache: Redis outages', () => {
  const f = useCacheFixture();

  it('a Redis that accepts connections but never answers: once the breaker opens, reads stop waiting for timeouts', async () => {
    const sockets: net.Socket[] = [];
    const server = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const redis = f.client({ url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`, connectTimeoutMs: 200, commandTimeoutMs: 200 });
      const cache = f.cache({ redis, breaker: { failureThreshold: 2, openMs: 60_000 } });
      await f.createAccount('acc-hang', 5);
      // the first two reads pay the timeouts and open the breaker; callers still get the account
      for (let i = 0; i < 2; i += 1) assert.deepEqual(pick(await cache.get(accountEntity, 'acc-hang')), ['bypass', 1]);
      assert.equal(cache.breakerState, 'open');
      const startedMs = Date.now();
      const reads = [];
      for (let i = 0; i < 20; i += 1) reads.push(pick(await cache.get(accountEntity, 'acc-hang')));
      const elapsedMs = Date.now() - startedMs;
      assert.deepEqual(reads, Array.from({ length: 20 }, () => ['bypass', 1]));
      assert.ok(elapsedMs < 1_000, `20 reads with the breaker open took ${elapsedMs} ms (a single command timeout is 200 ms)`);
      redis.disconnect();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('Redis stopped: reads answer from the table, invalidations are reported; after it returns, replays converge and reconcile finds 0 mismatches', async () => {
    // GIVEN two cached accounts and a fast breaker
    const stream = await f.streamReader();
    const cache = f.cache({ breaker: { failureThreshold: 2, openMs: 200 } });
    // The invalidator runs in its own containers; a breaker there must never hold invalidations back.
    const invalidate = f.invalidator(f.cache({ breaker: { failureThreshold: 1, openMs: 60_000 } }));
    const api = f.readApi(cache);
    const v1 = toCachedAccount(await f.createAccount('acc-out-1', 10));
    await f.createAccount('acc-out-2', 20);
    assert.deepEqual(await invalidate(await stream.next({ minRecords: 2 })), { batchItemFailures: [] });
    assert.deepEqual(pick(await cache.get(accountEntity, 'acc-out-1')), ['miss', 1]);
    assert.deepEqual(pick(await cache.get(accountEntity, 'acc-out-1')), ['hit', 1]);

    // WHEN Redis stops and both accounts change
    await f.local.engines.redis.stop();
    await f.changeAccount('acc-out-1', 5);
    await f.changeAccount('acc-out-2', 5);
    const event = await stream.next({ minRecords: 2 });

    // THEN reads keep answering, from the table, without errors
    const { value: reads, output } = await captureOutput(async () => {
      const answers = [];
      for (let i = 0; i < 10; i += 1) answers.push(pick(await cache.get(accountEntity, 'acc-out-1')));
      f.observability.metrics.publishStoredMetrics();
      return answers;
    });
    assert.deepEqual(reads, Array.from({ length: 10 }, () => ['bypass', 2]));
    assert.equal(metricTotal(output, CACHE_METRICS.fallbacks), 10);
    // It opened; on a loaded machine the ten reads can outlast its 200 ms open time, and a failed
    // half-open trial opens it again, so once or more.
    assert.ok(metricTotal(output, CACHE_METRICS.breakerTransitions, { reason: 'open' }) >= 1);
    const response = await api(getAccount('acc-out-2'));
    assert.deepEqual([response.statusCode, response.headers?.['x-cache'], JSON.parse(response.body ?? '{}').balance], [200, 'bypass', 25]);
    // AND the invalidations are reported for the stream to retry
    const sequenceNumbers = event.Records.map((record) => ({ itemIdentifier: record.dynamodb?.SequenceNumber }));
    assert.deepEqual(await invalidate(event), { batchItemFailures: sequenceNumbers });

    // WHEN Redis returns on the same port
    const restarted = await startRedis({ port: f.local.engines.redis.port });
    try {
      // a fill of v1 that lands after recovery, before the stream's retry: what a lost invalidation leaves behind
      assert.equal(await f.plant(entityCacheKeys('account', 'acc-out-1', 1), 1, encodeValue(v1)), FILL_OUTCOMES.stored);
      // THEN the stream's retries apply as soon as the connection is back, whatever state a
      // breaker is in (the invalidator's would stay open for a minute)
      await waitFor('a replayed invalidation to apply', async () => (await invalidate(event)).batchItemFailures.length === 0);
      assert.deepEqual(await invalidate(event), { batchItemFailures: [] }, 'replaying again changes nothing');
      // The readers' breaker (open for 200 ms) lets a trial call through again.
      await new Promise((resolve) => setTimeout(resolve, 250));
      assert.deepEqual(pick(await cache.get(accountEntity, 'acc-out-1')), ['miss', 2]);
      assert.deepEqual(pick(await cache.get(accountEntity, 'acc-out-1')), ['hit', 2]);
      assert.deepEqual(pick(await cache.get(accountEntity, 'acc-out-2')), ['miss', 2]);
      assert.equal(cache.breakerState, 'closed');
      const report = await cache.reconcile({ sample: 100 });
      assert.deepEqual([report.sampled, report.mismatches, report.mismatchRate], [2, 0, 0]);
    } finally {
      await restarted.stop();
    }
  });

  /**
   * Account v1 on a Redis of its own, its INSERT invalidated; a reader whose table read (of v1) is
   * served but not yet returned; v2 commits and its invalidation runs (the tombstone that refuses
   * v1); then `lose` makes Redis forget, and only then does the reader's fill arrive.
   * Resolves with what the slow reader answered, the three reads after it, and the metrics output.
   */
  async function lateFillAfter(id: string, lose: (redis: { server: Engine; url: string; keys: EntityCacheKeys }) => Promise<Engine>) {
    let server = await startRedis();
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const stream = await f.streamReader();
      const table = f.observedDocuments();
      const readerRedis = f.client({ url });
      const reader = f.cache({ redis: readerRedis, documents: table.documents });
      const invalidate = f.invalidator(f.cache({ redis: f.client({ url }) }));
      await f.createAccount(id, 10);
      assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
      const release = table.holdResponses();
      const slowRead = reader.get(accountEntity, id);
      await waitFor('the reader to read the table', () => table.answered() === 1);
      await f.changeAccount(id, 5);
      assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
      server = await lose({ server, url, keys: entityCacheKeys(accountEntity.name, id, accountEntity.schemaVersion) });
      await waitFor("the reader's connection to answer", async () => (await readerRedis.ping().catch(() => '')) === 'PONG', 10_000);
      release();
      const { value: late, output } = await captureOutput(async () => {
        const read = await slowRead;
        f.observability.metrics.publishStoredMetrics();
        return read;
      });
      const later = [];
      for (let i = 0; i < 3; i += 1) later.push(pick(await reader.get(accountEntity, id)));
      return { late, later, output };
    } finally {
      await server.stop();
    }
  }

  // In each case the reader answers what it read, and every later read answers v2 (a miss, then
  // hits), none the v1 a stored fill would have kept until its TTL: the fill was refused because
  // its ticket, taken before the table read, was gone with whatever Redis lost, or (the tombstone
  // alone evicted) because the invalidation had raised the floor of the tickets out.
  it('Redis restarted empty while a reader held a table read older than a commit: its fill is refused, not stored over the lost tombstone', async () => {
    const { late, later, output } = await lateFillAfter('acc-restart', async ({ server }) => {
      const port = server.port;
      await server.stop();
      return startRedis({ port });
    });
    assert.equal(late.value?.version, 1);
    assert.deepEqual(later, [['miss', 2], ['hit', 2], ['hit', 2]]);
    assert.equal(metricTotal(output, CACHE_METRICS.fillsRefused, { reason: FILL_OUTCOMES.ticketGone }), 1);
  });

  it('FLUSHALL while a reader held a table read older than a commit (the connection stays up): its fill is refused', async () => {
    const { late, later, output } = await lateFillAfter('acc-flushed', async ({ server, url }) => {
      const admin = f.client({ url });
      await connectCacheClient(admin);
      assert.equal(await admin.flushall(), 'OK');
      return server;
    });
    assert.equal(late.value?.version, 1);
    assert.deepEqual(later, [['miss', 2], ['hit', 2], ['hit', 2]]);
    assert.equal(metricTotal(output, CACHE_METRICS.fillsRefused, { reason: FILL_OUTCOMES.ticketGone }), 1);
  });

  it("the item's tombstone evicted (memory pressure) while a reader held a table read older than a commit: its fill is refused", async () => {
    const { late, later, output } = await lateFillAfter('acc-evicted', async ({ server, url, keys }) => {
      // (what maxmemory-policy volatile-lru does to a tombstone, which carries a TTL)
      const admin = f.client({ url });
      await connectCacheClient(admin);
      assert.equal(await admin.del(keys.tombstone), 1);
      return server;
    });
    assert.equal(late.value?.version, 1);
    assert.deepEqual(later, [['miss', 2], ['hit', 2], ['hit', 2]]);
    assert.equal(metricTotal(output, CACHE_METRICS.fillsRefused, { reason: FILL_OUTCOMES.staleTombstone }), 1);
  });

  it('a read that joins a flight while Redis is unreachable, after an invalidation it cannot see: it reads the table itself', async () => {
    // GIVEN account v1, its INSERT invalidated, and a reader (reaching Redis through a link that can be cut)
    // whose table read of v1 is served but not yet returned
    const server = await startRedis();
    const link = await startTcpFaultProxy({ targetPort: server.port });
    try {
      const stream = await f.streamReader();
      const table = f.observedDocuments();
      const reader = f.cache({ redis: f.client({ url: `redis://127.0.0.1:${link.port}` }), documents: table.documents });
      const invalidate = f.invalidator(f.cache({ redis: f.client({ url: `redis://127.0.0.1:${server.port}` }) }));
      await f.createAccount('acc-blind', 10);
      assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
      const release = table.holdResponses();
      const leader = reader.get(accountEntity, 'acc-blind');
      await waitFor('the leader to read the table', () => table.answered() === 1);
      // WHEN v2 commits and its invalidation runs, the reader loses its link to Redis, and only then
      // a second read arrives and joins the flight
      await f.changeAccount('acc-blind', 5);
      assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
      await link.cut();
      const joiner = reader.get(accountEntity, 'acc-blind');
      release();
      // THEN the leader answers what it read; the joiner, unable to read the tombstone, does not
      // take the flight's answer on trust
      const { value: reads } = await captureOutput(() => Promise.all([leader, joiner]));
      assert.deepEqual(reads.map((read) => read.value?.version), [1, 2]);
    } finally {
      await link.stop();
      await server.stop();
    }
  });

  it('Redis unreachable for 20 s while its data survives: every invalidation of the commits made meanwhile lands, and no later read returns an older version', async () => {
    // GIVEN readers and an invalidator reaching Redis through a link that can be cut (Redis itself keeps running, data and all)
    const server = await startRedis();
    const link = await startTcpFaultProxy({ targetPort: server.port });
    try {
      const url = `redis://127.0.0.1:${link.port}`;
      const stream = await f.streamReader();
      const invalidate = f.invalidator(f.cache({ redis: f.client({ url }) }));
      const reader = f.cache({ redis: f.client({ url }), breaker: { failureThreshold: 2, openMs: 200 } });
      await f.createAccount('acc-away', 10);
      assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
      assert.deepEqual(pick(await reader.get(accountEntity, 'acc-away')), ['miss', 1]);
      assert.deepEqual(pick(await reader.get(accountEntity, 'acc-away')), ['hit', 1]);
      // WHEN the link goes down, two commits happen, and the stream invokes the invalidator with a 30 s timeout
      await link.cut();
      await f.changeAccount('acc-away', 1);
      await f.changeAccount('acc-away', 1);
      const event = await stream.next({ minRecords: 2 });
      const startedMs = Date.now();
      const applying = invalidate(event, createLambdaContext({ functionName: 'cache-invalidator', timeoutMs: 30_000 }));
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      await link.restore();
      // THEN the invocation waited for Redis instead of spending the stream's retries in a millisecond each
      const { value: response } = await captureOutput(() => applying);
      assert.deepEqual(response, { batchItemFailures: [] });
      assert.ok(Date.now() - startedMs >= 20_000);
      // AND the entry v1 left behind is gone: readers answer v3 from here on
      await waitFor('the readers\' breaker to close', async () => (await reader.get(accountEntity, 'acc-away')).source !== 'bypass', 5_000);
      for (let i = 0; i < 3; i += 1) assert.equal((await reader.get(accountEntity, 'acc-away')).value?.version, 3);
    } finally {
      await link.stop();
      await server.stop();
    }
  });
});

function pick(read: { source: string; value?: { version: number } | undefined }): [string, number | undefined] {
  return [read.source, read.value?.version];
}
