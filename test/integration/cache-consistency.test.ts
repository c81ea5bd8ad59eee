import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TICKETS_PER_ITEM, entityCacheKeys, CACHE_METRICS, FILL_OUTCOMES, FILL_REFUSALS } from '../../shared/cache/index.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { useCacheFixture, waitFor } from '../helpers/cache-fixture.ts';
import { accountEntity } from '../../workloads/accounts/index.ts';

describe('cache: invalidation and fills on redis-server + DynamoDB Local', () => {
  const f = useCacheFixture();

  it('the classic race: a reader that read v1 before the commit of v2 cannot put v1 back after the invalidation', async () => {
    // GIVEN account v1, its INSERT already invalidated, and a reader whose table read is served but not yet returned
    const stream = await f.streamReader();
    const table = f.observedDocuments();
    const cache = f.cache({ documents: table.documents });
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-race', 100);
    assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
    const release = table.holdResponses();
    const slowRead = cache.get(accountEntity, 'acc-race');
    await waitFor('the reader to read the table', () => table.requests() === 1);
    // WHEN the writer commits v2 and the invalidator applies its real stream record, then the reader resumes
    await f.changeAccount('acc-race', 5);
    const event = await stream.next();
    assert.equal(event.Records[0]?.eventName, 'MODIFY');
    assert.deepEqual(await invalidate(event), { batchItemFailures: [] });
    release();
    const { value: late, output } = await captureOutput(async () => {
      const read = await slowRead;
      f.observability.metrics.publishStoredMetrics();
      return read;
    });
    // THEN the late fill was refused by the tombstone and every later read answers v2
    assert.equal(late.value?.version, 1, 'the slow reader returns what it read');
    assert.equal(metricTotal(output, CACHE_METRICS.fillsRefused, { reason: FILL_OUTCOMES.staleTombstone }), 1);
    const later = await Promise.all([1, 2, 3].map(() => cache.get(accountEntity, 'acc-race')));
    assert.deepEqual(later.map((read) => read.value?.version), [2, 2, 2]);
    assert.equal((await cache.get(accountEntity, 'acc-race')).source, 'hit');
    assert.equal((await cache.get(accountEntity, 'acc-race')).value?.balance, 105);
  });

  it('a read that joins a single-flight fill started before an invalidation gets the new version', async () => {
    // GIVEN account v1 and a reader whose table read (of v1) is served but not yet returned
    const stream = await f.streamReader();
    const table = f.observedDocuments();
    const cache = f.cache({ documents: table.documents });
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-join', 100);
    assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
    const release = table.holdResponses();
    const leader = cache.get(accountEntity, 'acc-join');
    // (answered, not only sent: under load a request sent before the change can reach DynamoDB after it)
    await waitFor('the leader to read the table', () => table.answered() === 1);
    // WHEN v2 commits and its invalidation runs, and only then a second read arrives and joins the flight
    await f.changeAccount('acc-join', 5);
    assert.deepEqual(await invalidate(await stream.next()), { batchItemFailures: [] });
    const joiner = cache.get(accountEntity, 'acc-join');
    release();
    // THEN the leader may answer what it read, but the joiner, which arrived after the invalidation, answers v2
    assert.equal((await leader).value?.version, 1);
    assert.equal((await joiner).value?.version, 2);
  });

  it('100 concurrent misses on one key in one container cost exactly 1 table read', async () => {
    const table = f.observedDocuments();
    const cache = f.cache({ documents: table.documents });
    await f.createAccount('acc-stampede', 7);
    const reads = await Promise.all(Array.from({ length: 100 }, () => cache.get(accountEntity, 'acc-stampede')));
    assert.equal(table.requests(), 1);
    assert.ok(reads.every((read) => read.value?.version === 1 && read.value.balance === 7));
    assert.equal((await cache.get(accountEntity, 'acc-stampede')).source, 'hit');
    assert.equal(table.requests(), 1, 'the fill serves the next read');
  });

  it('a hit costs one Redis round trip, a miss two: the lookup that takes its fill ticket, then the fill', async () => {
    const redis = await f.redis();
    const cache = f.cache({ redis });
    for (const id of ['acc-trips-warm', 'acc-trips']) await f.createAccount(id, 3);
    // (the scripts loaded first: a script unknown to this redis-server is sent once more, as EVAL)
    await cache.get(accountEntity, 'acc-trips-warm');
    await cache.get(accountEntity, 'acc-trips-warm');
    const sent: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name);
      return (send as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof redis.sendCommand;
    const miss = await cache.get(accountEntity, 'acc-trips');
    assert.deepEqual([miss.source, sent], ['miss', ['evalsha', 'evalsha']]);
    sent.length = 0;
    const hit = await cache.get(accountEntity, 'acc-trips');
    assert.deepEqual([hit.source, hit.value?.balance, sent], ['hit', 3, ['evalsha']]);
  });

  it('a cold container: concurrent first reads of different keys share the one connection attempt', async () => {
    const cache = f.cache();
    const ids = Array.from({ length: 10 }, (_, i) => `acc-cold-${i}`);
    for (const id of ids) await f.createAccount(id);
    const reads = await Promise.all(ids.map((id) => cache.get(accountEntity, id)));
    assert.deepEqual(reads.map((read) => read.source), ids.map(() => 'miss'));
    assert.equal(cache.breakerState, 'closed');
  });

  it('a fill whose table read is older than maxFillDelayMs is dropped, so it can never outlive a tombstone', async () => {
    let clockMs = 0;
    const cache = f.cache({ maxFillDelayMs: 5_000, tombstoneTtlMs: 10_000, nowMs: () => (clockMs += 6_000) });
    await f.createAccount('acc-slow');
    const { value: read, output } = await captureOutput(async () => {
      const answer = await cache.get(accountEntity, 'acc-slow');
      f.observability.metrics.publishStoredMetrics();
      return answer;
    });
    assert.deepEqual([read.source, read.value?.version], ['miss', 1]);
    assert.equal(metricTotal(output, CACHE_METRICS.fillsRefused, { reason: FILL_REFUSALS.tooSlow }), 1);
    assert.equal((await cache.get(accountEntity, 'acc-slow')).source, 'miss', 'nothing was stored');
  });

  it('Lua: an invalidation applied twice or out of order leaves the newest state', async () => {
    const redis = await f.redis();
    const scripts = await f.scripts(redis);
    const keys = entityCacheKeys('account', 'acc-lua', 1);
    const fill = async (version: number) => scripts.fill(keys, await f.ticket(scripts, keys), version, `{"v":${version}}`, 60_000);
    assert.equal(await fill(2), FILL_OUTCOMES.stored);
    // the newest invalidation first, then a replay of it, then older ones
    for (const version of [3, 3, 1, 2]) assert.equal((await scripts.invalidate([keys], version, 30_000)).tombstoneVersion, 3);
    assert.equal(await redis.get(keys.tombstone), '3');
    assert.equal(await redis.exists(keys.value), 0, 'v2 was dropped by the v3 tombstone');
    const ttl = await redis.pttl(keys.tombstone);
    assert.ok(ttl > 25_000 && ttl <= 30_000, `tombstone TTL ${ttl}`);
    // fills are judged against the tombstone and the stored value
    assert.equal(await fill(2), FILL_OUTCOMES.staleTombstone);
    assert.equal(await fill(3), FILL_OUTCOMES.stored);
    assert.equal(await fill(3), FILL_OUTCOMES.staleValue);
    // replaying invalidations up to the cached version keeps the (current) value
    for (const version of [3, 2, 1]) assert.equal((await scripts.invalidate([keys], version, 30_000)).deleted, 0);
    assert.deepEqual(await redis.hmget(keys.value, 'version', 'payload'), ['3', '{"v":3}']);
    const valueTtl = await redis.pttl(keys.value);
    assert.ok(valueTtl > 50_000 && valueTtl <= 60_000, `value TTL ${valueTtl}`);
  });

  it('Lua: a fill stores only with its ticket, spent once, within its deadline by Redis\'s clock, and not older than an invalidation since', async () => {
    const redis = await f.redis();
    const scripts = await f.scripts(redis);
    const keys = entityCacheKeys('account', 'acc-ticket', 1);
    // no ticket, or one already spent
    assert.equal(await scripts.fill(keys, 'never-taken', 1, '{"v":1}', 60_000), FILL_OUTCOMES.ticketGone);
    const spent = await f.ticket(scripts, keys);
    assert.equal(await scripts.fill(keys, spent, 1, '{"v":1}', 60_000), FILL_OUTCOMES.stored);
    assert.equal(await scripts.fill(keys, spent, 2, '{"v":2}', 60_000), FILL_OUTCOMES.ticketGone);
    // readers in flight side by side each hold their own ticket; an invalidation while they are out
    // raises their floor, which refuses an older value even once the tombstone is gone (evicted)
    const [first, second, third] = [await f.ticket(scripts, keys), await f.ticket(scripts, keys), await f.ticket(scripts, keys)];
    assert.equal(await scripts.fill(keys, first, 2, '{"v":2}', 60_000), FILL_OUTCOMES.stored);
    await scripts.invalidate([keys], 4, 30_000);
    assert.equal(await redis.del(keys.tombstone), 1);
    assert.equal(await scripts.fill(keys, second, 3, '{"v":3}', 60_000), FILL_OUTCOMES.staleTombstone);
    // (a read that saw the invalidated version itself fills)
    assert.equal(await scripts.fill(keys, third, 4, '{"v":4}', 60_000), FILL_OUTCOMES.stored);
    // and a ticket lost with the key (FLUSHALL, a restart empty) is refused, whatever the version
    const lost = await f.ticket(scripts, keys);
    assert.equal(await redis.del(keys.tickets), 1);
    assert.equal(await scripts.fill(keys, lost, 9, '{"v":9}', 60_000), FILL_OUTCOMES.ticketGone);
    // past its deadline (Redis's clock), a ticket is refused however new the value, and dropped by the next ticket
    const late = await f.ticket(scripts, keys, 30);
    const kept = await f.ticket(scripts, keys);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(await scripts.fill(keys, late, 9, '{"v":9}', 60_000), FILL_OUTCOMES.tooSlow);
    const expired = await f.ticket(scripts, keys, 30);
    await new Promise((resolve) => setTimeout(resolve, 60));
    await f.ticket(scripts, keys);
    assert.equal(await redis.zscore(keys.tickets, expired), null, 'expired tickets are dropped as new ones are taken');
    assert.equal(await scripts.fill(keys, kept, 10, '{"v":10}', 60_000), FILL_OUTCOMES.stored);
    const ttl = await redis.pttl(keys.tickets);
    assert.ok(ttl > 55_000 && ttl <= 60_000, `the tickets' key lives as long as its newest ticket: ${ttl}`);
  });

  it('Lua: a lookup answers a hit as stored and takes a miss\'s ticket; tickets out at once are capped, and the floor lasts as long as a tombstone, however many reads keep the tickets alive', async () => {
    const redis = await f.redis();
    const scripts = await f.scripts(redis);
    // a hot item nobody can fill (reads of an id not created yet): tickets pile up to the cap, no further
    const absent = entityCacheKeys('account', 'acc-nobody-yet', 1);
    for (let i = 0; i < MAX_TICKETS_PER_ITEM; i += 1) await f.ticket(scripts, absent);
    assert.equal(await scripts.ticket(absent, 60_000), undefined);
    assert.deepEqual(await scripts.lookup(absent, 60_000), { hit: false, ticket: undefined }, "a read's lookup too");
    assert.equal(await redis.zcard(absent.tickets), MAX_TICKETS_PER_ITEM);
    // a hit's lookup answers the entry as stored and takes no ticket
    const filled = entityCacheKeys('account', 'acc-filled', 1);
    const miss = await scripts.lookup(filled, 60_000);
    assert.ok(!miss.hit && miss.ticket !== undefined && (await redis.zscore(filled.tickets, miss.ticket)) !== null, 'a miss takes its ticket');
    assert.equal(await scripts.fill(filled, miss.ticket, 5, '{"v":5}', 60_000), FILL_OUTCOMES.stored);
    assert.deepEqual(await scripts.lookup(filled, 60_000), { hit: true, version: '5', payload: '{"v":5}' });
    assert.equal(await redis.zcard(filled.tickets), 0);
    // an item deleted (tombstone and floor at its last version + 1) and created again at version 1:
    // refused while the deletion's tombstone and floor last, filled once they have ended
    const keys = entityCacheKeys('account', 'acc-again', 1);
    const before = await f.ticket(scripts, keys);
    await scripts.invalidate([keys], 8, 50);
    assert.equal(await scripts.fill(keys, before, 1, '{"v":1}', 60_000), FILL_OUTCOMES.staleTombstone);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(await scripts.fill(keys, await f.ticket(scripts, keys), 1, '{"v":1}', 60_000), FILL_OUTCOMES.stored);
  });

  it('a lookup or ticket Redis refuses with an error reply (e.g. a user without its commands) is logged, without the script, and the read answers from the table', async () => {
    const cache = f.cache();
    const redis = await f.redis();
    for (const id of ['acc-no-ticket', 'acc-unreadable']) {
      await f.createAccount(id, 4);
      // (a tickets key of the wrong type makes the script fail with an error reply, as NOPERM would)
      await redis.set(entityCacheKeys('account', id, 1).tickets, 'not a sorted set');
    }
    // a miss: its lookup takes the ticket, so the whole lookup is refused and the read bypasses Redis
    const miss = await captureOutput(() => cache.get(accountEntity, 'acc-no-ticket'));
    assert.deepEqual([miss.value.source, miss.value.value?.balance], ['bypass', 4]);
    const failed = miss.output.logs.find((log) => log.message === 'cache read failed' && log.level === 'ERROR');
    assert.ok(failed, JSON.stringify(miss.output.logs));
    assert.match(JSON.stringify(failed), /WRONGTYPE/);
    assert.doesNotMatch(JSON.stringify(failed), /redis\.call/, 'the Lua text is left out of the log line');
    // an entry this release cannot decode: read through with a ticket of its own, refused and logged
    await redis.hset(entityCacheKeys('account', 'acc-unreadable', 1).value, 'version', '1', 'payload', 'not json');
    const unreadable = await captureOutput(() => cache.get(accountEntity, 'acc-unreadable'));
    assert.deepEqual([unreadable.value.source, unreadable.value.value?.balance], ['miss', 4]);
    assert.ok(unreadable.output.logs.some((log) => log.message === 'cache ticket failed' && log.level === 'ERROR'), JSON.stringify(unreadable.output.logs));
    assert.deepEqual(await redis.hmget(entityCacheKeys('account', 'acc-unreadable', 1).value, 'payload'), ['not json'], 'nothing was filled without a ticket');
  });

  it('stream records replayed and reordered through the invalidator converge to the newest version', async () => {
    const stream = await f.streamReader();
    const cache = f.cache();
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-replay');
    assert.equal((await cache.get(accountEntity, 'acc-replay')).value?.version, 1);
    await f.changeAccount('acc-replay');
    await f.changeAccount('acc-replay');
    const event = await stream.next({ minRecords: 3 });
    const reversed = { Records: [...event.Records].reverse() };
    for (const batch of [event, event, reversed]) assert.deepEqual(await invalidate(batch), { batchItemFailures: [] });
    const redis = await f.redis();
    assert.equal(await redis.get(entityCacheKeys('account', 'acc-replay', 1).tombstone), '3');
    const read = await cache.get(accountEntity, 'acc-replay');
    assert.deepEqual([read.source, read.value?.version], ['miss', 3]);
    assert.equal((await cache.get(accountEntity, 'acc-replay')).source, 'hit');
    assert.deepEqual(await invalidate(reversed), { batchItemFailures: [] });
    assert.deepEqual([(await cache.get(accountEntity, 'acc-replay')).source], ['hit'], 'replays at the cached version keep the entry');
  });

  it('a deleted account: REMOVE tombstones old version + 1, so a late fill of the deleted item is refused', async () => {
    const stream = await f.streamReader();
    const cache = f.cache();
    const invalidate = f.invalidator(cache);
    await f.createAccount('acc-gone');
    await f.changeAccount('acc-gone');
    assert.equal((await cache.get(accountEntity, 'acc-gone')).value?.version, 2);
    await f.deleteAccount('acc-gone');
    const { value: response, output } = await captureOutput(async () => invalidate(await stream.next({ minRecords: 3 })));
    assert.deepEqual(response, { batchItemFailures: [] });
    assert.equal(metricTotal(output, CACHE_METRICS.invalidations), 3);
    assert.ok(metricTotal(output, CACHE_METRICS.invalidationLagMs) >= 0);
    const keys = entityCacheKeys('account', 'acc-gone', 1);
    assert.equal(await f.plant(keys, 2, '{}'), FILL_OUTCOMES.staleTombstone);
    const read = await cache.get(accountEntity, 'acc-gone');
    assert.deepEqual([read.source, read.value], ['miss', undefined]);
  });

  it('invalidation lag is measured from the item\'s own updatedAt to the tombstone write', async () => {
    const stream = await f.streamReader();
    const invalidate = f.invalidator(f.cache());
    const item = await f.createAccount('acc-lag');
    const event = await stream.next();
    const { output } = await captureOutput(() => invalidate(event));
    const lag = metricTotal(output, CACHE_METRICS.invalidationLagMs);
    assert.ok(lag >= 0 && lag <= Date.now() - Date.parse(item.updatedAt), `lag ${lag}`);
  });

  it('after a schema version bump, new readers never see old-format entries; the invalidator covers both during the rollout', async () => {
    const stream = await f.streamReader();
    const v1 = f.cache();
    const v2 = f.cache({ schema: { schemaVersion: 2, olderSchemaVersions: [1] } });
    const oldKeys = entityCacheKeys('account', 'acc-schema', 1);
    const newKeys = entityCacheKeys('account', 'acc-schema', 2);
    await f.createAccount('acc-schema', 40);
    assert.equal((await v1.get(accountEntity, 'acc-schema')).source, 'miss');
    // an old reader's entry, in a format the new code cannot read
    const redis = await f.redis();
    await redis.hset(oldKeys.value, 'payload', '{"id":"acc-schema","cents":"4000","rev":1}');
    const fresh = await v2.get(accountEntity, 'acc-schema');
    assert.deepEqual([fresh.source, fresh.value?.balance, fresh.value?.version], ['miss', 40, 1]);
    assert.equal((await v2.get(accountEntity, 'acc-schema')).source, 'hit');
    assert.equal(await redis.hget(oldKeys.value, 'payload'), '{"id":"acc-schema","cents":"4000","rev":1}', 'old entry untouched, unread');
    // a change invalidates the entries of both versions in one atomic call (same hash tag, same slot)
    await f.changeAccount('acc-schema', 2);
    assert.deepEqual(await f.invalidator(v2)(await stream.next({ minRecords: 2 })), { batchItemFailures: [] });
    assert.equal(await redis.exists(oldKeys.value, newKeys.value), 0);
    assert.deepEqual([await redis.get(oldKeys.tombstone), await redis.get(newKeys.tombstone)], ['2', '2']);
    assert.equal((await v2.get(accountEntity, 'acc-schema')).value?.balance, 42);
  });

  it('reconcile finds entries that differ from the table, repairs them, then reports 0 mismatches', async () => {
    const cache = f.cache({ schema: { schemaVersion: 7 } });
    for (const id of ['acc-rec-1', 'acc-rec-2', 'acc-rec-3']) {
      await f.createAccount(id, 10, { tier: 'gold', tags: { b: 1, a: 2 } });
      await cache.get(accountEntity, id);
    }
    // lost invalidations: a change and a deletion the cache never heard of
    await f.changeAccount('acc-rec-1', 90);
    await f.deleteAccount('acc-rec-2');
    const found = await cache.reconcile({ sample: 100 });
    assert.deepEqual({ ...found, details: undefined }, { sampled: 3, mismatches: 2, repaired: 0, mismatchRate: 2 / 3, details: undefined });
    assert.deepEqual(found.details.map((d) => [d.id, d.cachedVersion, d.tableVersion]).sort(), [['acc-rec-1', 1, 2], ['acc-rec-2', 1, undefined]]);
    const repaired = await cache.reconcile({ sample: 100, repair: true });
    assert.equal(repaired.repaired, 2);
    const after = await cache.reconcile({ sample: 100 });
    assert.deepEqual([after.sampled, after.mismatches, after.mismatchRate], [2, 0, 0]);
    const read = await cache.get(accountEntity, 'acc-rec-1');
    assert.deepEqual([read.source, read.value?.balance], ['hit', 100], 'the repair refilled the current item');
  });
});
