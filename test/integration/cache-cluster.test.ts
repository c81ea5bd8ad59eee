import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { entityCacheKeys, connectCacheClient, FILL_OUTCOMES } from '../../shared/cache/index.ts';
import { useCacheFixture } from '../helpers/cache-fixture.ts';
import { useRedisCluster } from '../helpers/redis-cluster.ts';
import { accountEntity } from '../../workloads/accounts/index.ts';

/**
 * Cluster mode (as ElastiCache Serverless presents itself) on a one-node redis-server cluster that
 * owns all 16384 slots: the same code paths as a real cluster (CLUSTER SLOTS discovery, per-slot
 * routing, multi-key scripts that must stay in one slot, SCAN per master).
 */
describe('cache in cluster mode', () => {
  const f = useCacheFixture();
  const clusterUrl = useRedisCluster('cache-cluster');

  it('reads, fills, invalidates both schema versions atomically, and reconciles through ioredis Cluster', async () => {
    const redis = f.client({ url: clusterUrl(), cluster: true });
    await connectCacheClient(redis, 10_000);
    const stream = await f.streamReader();
    const cache = f.cache({ redis, schema: { schemaVersion: 1, olderSchemaVersions: [2] } });
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-cluster', 3);
    assert.deepEqual([(await cache.get(accountEntity, 'acc-cluster')).source, (await cache.get(accountEntity, 'acc-cluster')).source], ['miss', 'hit']);
    await f.changeAccount('acc-cluster', 4);
    // two schema versions' value, tombstone and tickets keys in one script call: legal only because the hash tag pins one slot
    assert.deepEqual(await invalidate(await stream.next({ minRecords: 2 })), { batchItemFailures: [] });
    assert.equal(await redis.get(entityCacheKeys('account', 'acc-cluster', 2).tombstone), '2');
    assert.equal(await f.plant(entityCacheKeys('account', 'acc-cluster', 1), 1, '{}', redis), FILL_OUTCOMES.staleTombstone);
    const read = await cache.get(accountEntity, 'acc-cluster');
    assert.deepEqual([read.source, read.value?.balance], ['miss', 7]);
    const report = await cache.reconcile({ sample: 10 });
    assert.deepEqual([report.sampled, report.mismatches], [1, 0]);
  });
});
