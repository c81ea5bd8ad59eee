import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cacheAccessString } from '../../infra/constructs/cache.ts';
import { entityCacheKeys, CacheAuthToken, connectCacheClient, FILL_OUTCOMES, type CacheClient } from '../../shared/cache/index.ts';
import { pingCache } from '../../shared/readiness/index.ts';
import { useCacheFixture, waitFor } from '../helpers/cache-fixture.ts';
import { useRedisCluster } from '../helpers/redis-cluster.ts';
import { accountEntity } from '../../workloads/accounts/index.ts';

/** The functions' user, with the exact access string the stack gives the ElastiCache user. */
const USER = 'ballast-functions';

/**
 * ElastiCache's IAM auth as a real redis-server sees it: a user whose password is whatever token
 * is current. The token source here signs tokens we control (ElastiCache would check a SigV4
 * signature instead; redis-server compares the password), with the production refresh rule on an
 * injected clock, so rotating the user's password stands in for a token expiring.
 */
describe('cache auth with expiring credentials (ElastiCache IAM auth on real redis-server users)', () => {
  const f = useCacheFixture();

  /** A token source issuing `issued` (cached until 10 minutes old on `nowMs`), counting signings. */
  function tokenSource() {
    const state = { issued: 'token-1', nowMs: Date.now(), signings: 0 };
    const source = new CacheAuthToken({ sign: () => (state.signings += 1, state.issued), nowMs: () => state.nowMs });
    return { state, auth: { username: USER, password: () => source.token() } };
  }

  /** Sets the user's ACL to the stack's access string and its only password to `password`. */
  async function setUser(admin: CacheClient, password: string): Promise<void> {
    await admin.call('ACL', 'SETUSER', USER, 'reset', ...cacheAccessString(['account', 'sku']).split(' '), `>${password}`);
  }

  /** Whether an auth failure reached `errors` (cluster errors carry the node's error as `lastNodeError`). */
  const refused = (errors: readonly Error[]) =>
    errors.some((error) => /WRONGPASS/.test(`${error.message} ${(error as { lastNodeError?: Error }).lastNodeError?.message ?? ''}`));

  it('standalone: a reconnect authenticates with the token current then; a static password stays refused', async () => {
    // GIVEN the user with password token-1, a client on the token source and one with token-1 in its url
    const admin = await f.redis();
    await setUser(admin, 'token-1');
    const port = new URL(f.local.env.BALLAST_CACHE_URL ?? '').port;
    const { state, auth } = tokenSource();
    const errors: Error[] = [];
    const client = f.client({ auth, onError: (error) => errors.push(error) });
    const staticErrors: Error[] = [];
    const fixed = f.client({ url: `redis://${USER}:token-1@127.0.0.1:${port}`, onError: (error) => staticErrors.push(error) });
    await connectCacheClient(client);
    await connectCacheClient(fixed);
    const key = entityCacheKeys('account', 'acc-iam-standalone', 1).tombstone;
    assert.deepEqual([await client.get(key), await fixed.get(key), state.signings], [null, null, 1]);

    // WHEN the password becomes token-2 (as a token expires); established connections carry on
    await admin.call('ACL', 'SETUSER', USER, 'resetpass', '>token-2');
    state.issued = 'token-2';
    assert.equal(await client.ping(), 'PONG');
    // AND the connections drop (a network blip, ElastiCache's 12-hour limit, a frozen Lambda's dead socket)
    await admin.call('CLIENT', 'KILL', 'USER', USER);

    // THEN within the refresh age the cached token-1 is refused on every reconnect
    await waitFor('the reconnect with the cached token-1 to be refused', () => refused(errors));
    await assert.rejects(client.get(key));
    // AND once the token is 10 minutes old, the next reconnect signs token-2 and gets in
    state.nowMs += 600_000;
    await waitFor('the client to reconnect with token-2', () => client.status === 'ready');
    assert.equal(await client.get(key), null);
    assert.equal(state.signings, 2);
    // AND without the refresh hook (the password fixed at creation), the client never gets back in
    await waitFor('the static password to be refused', () => refused(staticErrors));
    assert.notEqual(fixed.status, 'ready');
    await assert.rejects(fixed.get(key));
  });

  describe('cluster mode (as ElastiCache Serverless presents itself)', () => {
    const clusterUrl = useRedisCluster('cache-iam');

    it('the access string admits everything the cache does, through ioredis Cluster, and nothing else', async () => {
      // GIVEN the user with the stack's access string, and a cluster client authenticating as it
      const url = clusterUrl();
      const admin = await f.redis({ url });
      await setUser(admin, 'token-1');
      const { auth } = tokenSource();
      const redis = f.client({ url, cluster: true, auth });
      await connectCacheClient(redis, 10_000);
      // WHEN the cache is read, filled, invalidated and raced the way the functions do it
      const stream = await f.streamReader();
      const cache = f.cache({ redis });
      await f.createAccount('acc-iam', 3);
      assert.deepEqual([(await cache.get(accountEntity, 'acc-iam')).source, (await cache.get(accountEntity, 'acc-iam')).source], ['miss', 'hit']);
      await f.changeAccount('acc-iam', 4);
      assert.deepEqual(await f.invalidator(cache)(await stream.next({ minRecords: 2 })), { batchItemFailures: [] });
      const scripts = await f.scripts(redis);
      assert.equal(await f.plant(entityCacheKeys('account', 'acc-iam', 1), 1, '{}', redis), FILL_OUTCOMES.staleTombstone);
      assert.equal(await scripts.evictIfVersion(entityCacheKeys('account', 'acc-iam', 1).value, '1'), false);
      assert.deepEqual([(await cache.get(accountEntity, 'acc-iam')).source, (await cache.get(accountEntity, 'acc-iam')).value?.balance], ['miss', 7]);
      // AND the invalidation repair's full reconcile (SCAN over every node) runs as that user
      const report = await cache.reconcile({ repair: true, sample: Infinity });
      assert.ok(report.sampled >= 1 && report.mismatches === 0, `reconcile over SCAN: ${JSON.stringify(report)}`);
      // AND the worker's readiness probe pings with the same settings
      await pingCache({ url, cluster: true, auth });
      // THEN anything beyond that is refused
      for (const [what, command] of [
        ['FLUSHALL', () => redis.flushall()],
        ['a key outside account:*', () => redis.get('other:key')],
        ['CONFIG', () => redis.call('CONFIG', 'GET', 'maxmemory')],
        ['KEYS', () => redis.keys('account:*')],
        ['PUBLISH', () => redis.publish('channel', 'x')],
      ] as const) await assert.rejects(command(), /NOPERM/, what);
    });

    it('a reconnect of every node authenticates with the token current then', async () => {
      // GIVEN a connected cluster client on token-1
      const url = clusterUrl();
      const admin = await f.redis({ url });
      await setUser(admin, 'token-1');
      const { state, auth } = tokenSource();
      const errors: Error[] = [];
      const redis = f.client({ url, cluster: true, auth, onError: (error) => errors.push(error) });
      await connectCacheClient(redis, 10_000);
      const key = entityCacheKeys('account', 'acc-iam-cluster', 1).tombstone;
      assert.equal(await redis.get(key), null);
      // WHEN the password becomes token-2 and the connections drop
      await admin.call('ACL', 'SETUSER', USER, 'resetpass', '>token-2');
      state.issued = 'token-2';
      await admin.call('CLIENT', 'KILL', 'USER', USER);
      // THEN nodes recreated within the refresh age are refused with the cached token-1
      await waitFor('the cluster reconnect with the cached token-1 to be refused', () => refused(errors));
      // AND once it is 10 minutes old, the recreated nodes sign token-2 and the cache answers again
      state.nowMs += 600_000;
      await waitFor('the cluster to answer with token-2', async () => (await redis.get(key).then(() => true, () => false)));
      assert.ok(state.signings >= 2);
    });
  });
});
