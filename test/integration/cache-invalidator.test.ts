import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MALFORMED_RECORD } from '../../functions/cache-invalidator/invalidator.ts';
import { entityCacheKeys, CACHE_METRICS } from '../../shared/cache/index.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { useCacheFixture } from '../helpers/cache-fixture.ts';
import { accountEntity } from '../../workloads/accounts/index.ts';

describe('cache invalidator: batch failure handling', () => {
  const f = useCacheFixture();

  it('a record it cannot apply is reported with every later record; earlier ones are applied', async () => {
    const stream = await f.streamReader();
    const cache = f.cache();
    const invalidate = f.invalidator(cache);
    const redis = await f.redis();
    for (const id of ['acc-b1', 'acc-b2', 'acc-b3']) await f.createAccount(id);
    const event = await stream.next({ minRecords: 3 });
    // a value key of the wrong type makes the script fail for acc-b2 only (Redis is up)
    await redis.set(entityCacheKeys('account', 'acc-b2', 1).value, 'not-a-hash');
    const response = await invalidate(event);
    assert.deepEqual(response.batchItemFailures, event.Records.slice(1).map((record) => ({ itemIdentifier: record.dynamodb?.SequenceNumber })));
    assert.equal(await redis.get(entityCacheKeys('account', 'acc-b1', 1).tombstone), '1');
    assert.equal(await redis.exists(entityCacheKeys('account', 'acc-b3', 1).tombstone), 0, 'not attempted: the stream retries from acc-b2');
    const read = await cache.get(accountEntity, 'acc-b2');
    assert.deepEqual([read.source, read.value?.version], ['bypass', 1], 'readers never see a cache error either');
    // once the cause is gone, the retry from the reported record converges
    await redis.del(entityCacheKeys('account', 'acc-b2', 1).value);
    assert.deepEqual(await invalidate({ Records: event.Records.slice(1) }), { batchItemFailures: [] });
    assert.equal(await redis.get(entityCacheKeys('account', 'acc-b3', 1).tombstone), '1');
  });

  it('malformed account records are logged and counted, not reported; other entities are ignored', async () => {
    const stream = await f.streamReader();
    const invalidate = f.invalidator(f.cache());
    await f.createAccount('acc-ok');
    const [good] = (await stream.next()).Records;
    assert.ok(good?.dynamodb?.NewImage);
    const malformed = structuredClone(good);
    malformed.dynamodb!.NewImage!.version = { S: 'seven' };
    const other = structuredClone(good);
    other.dynamodb!.Keys = { pk: { S: 'order#o-1' } };
    const { value: response, output } = await captureOutput(() => invalidate({ Records: [malformed, other, good] }));
    assert.deepEqual(response, { batchItemFailures: [] });
    assert.equal(metricTotal(output, CACHE_METRICS.invalidationsSkipped, { reason: MALFORMED_RECORD }), 1);
    assert.equal(metricTotal(output, CACHE_METRICS.invalidations), 1);
    assert.ok(output.logs.some((log) => log.level === 'ERROR' && log.sequenceNumber === malformed.dynamodb?.SequenceNumber));
  });
});
