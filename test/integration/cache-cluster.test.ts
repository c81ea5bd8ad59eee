import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { freePort } from '../../local/engines/index.ts';
import { tcpExchange, waitUntilReady } from '../../local/engines/readiness.ts';
import { startSupervised, type SupervisedProcess } from '../../local/engines/supervised-process.ts';
import { accountCacheKeys, connectCacheClient, FILL_OUTCOMES } from '../../shared/cache/index.ts';
import { useCacheFixture } from '../helpers/cache-fixture.ts';

/**
 * Cluster mode (as ElastiCache Serverless presents itself) on a one-node redis-server cluster that
 * owns all 16384 slots: the same code paths as a real cluster (CLUSTER SLOTS discovery, per-slot
 * routing, multi-key scripts that must stay in one slot, SCAN per master).
 */
describe('cache in cluster mode', () => {
  const f = useCacheFixture();
  let node: SupervisedProcess | undefined;
  let port = 0;
  let busPort = 0;
  const configFile = `/tmp/ballast-cache-cluster-${process.pid}.conf`;

  before(async () => {
    [port, busPort] = [await freePort(), await freePort()];
    node = await startSupervised('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no',
      '--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-announce-ip', '127.0.0.1', '--cluster-config-file', configFile, '--dir', '/tmp', '--loglevel', 'warning',
    ]);
    await waitUntilReady('redis-server (cluster)', async () => (await tcpExchange(port, 'PING\r\n')).startsWith('+PONG'), { timeoutMs: 10_000, describe: node.output, exited: node.exited });
    assert.match(await tcpExchange(port, 'CLUSTER ADDSLOTSRANGE 0 16383\r\n'), /^\+OK/);
    await waitUntilReady('cluster state ok', async () => (await tcpExchange(port, 'CLUSTER INFO\r\n')).includes('cluster_state:ok'), { timeoutMs: 10_000 });
  });
  after(async () => {
    await node?.stop();
    await rm(configFile, { force: true });
  });

  it('reads, fills, invalidates both schema versions atomically, and reconciles through ioredis Cluster', async () => {
    const redis = f.client({ url: `redis://127.0.0.1:${port}`, cluster: true });
    await connectCacheClient(redis, 10_000);
    const stream = await f.streamReader();
    const cache = f.cache({ redis, invalidatedSchemaVersions: [1, 2] });
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-cluster', 3);
    assert.deepEqual([(await cache.get('acc-cluster')).source, (await cache.get('acc-cluster')).source], ['miss', 'hit']);
    await f.changeAccount('acc-cluster', 4);
    // two value/tombstone pairs in one script call: legal only because the hash tag pins one slot
    assert.deepEqual(await invalidate(await stream.next({ minRecords: 2 })), { batchItemFailures: [] });
    assert.equal(await redis.get(accountCacheKeys('acc-cluster', 2).tombstone), '2');
    assert.equal(await (f.scripts(redis).then((scripts) => scripts.fill(accountCacheKeys('acc-cluster'), 1, '{}', 60_000))), FILL_OUTCOMES.staleTombstone);
    const read = await cache.get('acc-cluster');
    assert.deepEqual([read.source, read.account?.balance], ['miss', 7]);
    const report = await cache.reconcile({ sample: 10 });
    assert.deepEqual([report.sampled, report.mismatches], [1, 0]);
  });
});
