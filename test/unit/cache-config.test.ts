import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { CacheConfigurationError, cacheConfigFromEnv, createCacheClient, defineEntity, EntityCache, type EntityCacheOptions } from '../../shared/cache/index.ts';
import { createObservability } from '../../shared/observability/index.ts';

describe('cache configuration', () => {
  it('reads the function settings from the environment', () => {
    assert.deepEqual(cacheConfigFromEnv({ STATE_TABLE_NAME: 'state', BALLAST_CACHE_URL: 'rediss://cache:6379', BALLAST_CACHE_CLUSTER: 'true', AWS_LAMBDA_FUNCTION_VERSION: '12' }), {
      stateTableName: 'state', cacheUrl: 'rediss://cache:6379', cacheCluster: true, cacheAuth: { mode: 'none' }, workerVersion: '12',
    });
  });

  it('names every missing or malformed variable at once', () => {
    assert.throws(() => cacheConfigFromEnv({ BALLAST_CACHE_CLUSTER: 'yes' }), (error: unknown) =>
      error instanceof CacheConfigurationError &&
      ['STATE_TABLE_NAME is required', 'BALLAST_CACHE_URL is required', 'WORKER_VERSION is required', "BALLAST_CACHE_CLUSTER must be 'true' or 'false', got 'yes'"]
        .every((part) => error.message.includes(part)));
  });

  it('builds standalone and cluster clients from URLs, TLS for rediss://, without connecting', () => {
    const plain = createCacheClient({ url: 'redis://user:s3cret@cache.internal:6380/2' });
    assert.ok(plain instanceof Redis);
    assert.deepEqual([plain.status, plain.options.host, plain.options.port, plain.options.db, plain.options.username, plain.options.password, plain.options.tls],
      ['wait', 'cache.internal', 6380, 2, 'user', 's3cret', undefined]);
    assert.deepEqual([plain.options.enableOfflineQueue, plain.options.maxRetriesPerRequest, plain.options.lazyConnect], [false, 1, true]);
    const tls = createCacheClient({ url: 'rediss://cache.serverless.amazonaws.com', cluster: true });
    assert.ok(tls instanceof Cluster);
    assert.deepEqual(tls.options.redisOptions?.tls, { servername: 'cache.serverless.amazonaws.com' });
    plain.disconnect();
    tls.disconnect();
  });

  it('rejects other schemes and bad numbers with the fix, never echoing a password', () => {
    assert.throws(() => createCacheClient({ url: 'http://cache:6379' }), /scheme 'http:' is not supported: use 'redis:\/\/host:6379'/);
    assert.throws(() => createCacheClient({ url: 'not a url :pw@' }), CacheConfigurationError);
    assert.throws(() => createCacheClient({ url: 'redis://u:hunter2@cache/x' }), (error: unknown) => error instanceof Error && !error.message.includes('hunter2'));
    assert.throws(() => createCacheClient({ url: 'redis://cache', commandTimeoutMs: 0 }), /commandTimeoutMs must be > 0, got 0/);
  });

  it('EntityCache validates its options at construction, naming the field, the value and the fix', () => {
    const redis = createCacheClient({ url: 'redis://cache.internal' });
    const dynamodb = new DynamoDBClient({ region: 'us-east-1' });
    const entities = [defineEntity({ name: 'order', schemaVersion: 1, schema: z.object({ version: z.number() }) })];
    const base = { redis, documents: DynamoDBDocumentClient.from(dynamodb), tableName: 'state', observability: createObservability({ workerVersion: 'test' }), entities };
    const invalid = (options: Partial<EntityCacheOptions>, pattern: RegExp) =>
      assert.throws(() => new EntityCache({ ...base, ...options }), (error: unknown) => error instanceof CacheConfigurationError && pattern.test(error.message));
    try {
      invalid({ tombstoneTtlMs: 15_000 }, /tombstoneTtlMs must be >= 2 × maxFillDelayMs \(20000\).*got 15000/);
      invalid({ ttlJitterRatio: 1 }, /ttlJitterRatio must be in \[0, 1\), got 1/);
      invalid({ ttlMs: 0 }, /ttlMs must be a finite number > 0, got 0/);
      invalid({ entities: [] }, /entities must name at least one cached entity/);
      invalid({ entities: [...entities, ...entities] }, /must name each entity once \('order' is repeated\)/);
      invalid({ tableName: '' }, /tableName is required/);
      invalid({ breaker: { failureThreshold: 0 } }, /failureThreshold must be an integer >= 1, got 0/);
      assert.deepEqual([...new EntityCache({ ...base, ttlMs: undefined }).entities.keys()], ['order'], 'an explicit undefined keeps the default');
    } finally {
      redis.disconnect();
      dynamodb.destroy();
    }
  });

  it('the Lambda handler factories compose from the environment at cold start, without connecting', async () => {
    Object.assign(process.env, { STATE_TABLE_NAME: 'state', BALLAST_CACHE_URL: 'redis://127.0.0.1:1', WORKER_VERSION: 'entry-test', AWS_REGION: 'us-east-1' });
    const { registry } = await import('../fixtures/workloads/registry.ts');
    const { readApiHandler } = await import('../../functions/read-api/index.ts');
    const { invalidatorHandler } = await import('../../functions/cache-invalidator/index.ts');
    for (const factory of [readApiHandler, invalidatorHandler]) assert.equal(typeof factory(registry), 'function', factory.name);
  });
});
