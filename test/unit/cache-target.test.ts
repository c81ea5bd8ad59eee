import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ElastiCacheClient } from '@aws-sdk/client-elasticache';
import { cacheTarget } from '../../shared/operations/cache.ts';
import type { OpsContext } from '../../shared/operations/context.ts';

/** An operator's context for a stack with the given outputs, signing with static credentials. */
function contextFor(source: 'cloudformation' | 'local-file', outputs: Record<string, string>): { context: OpsContext; close: () => void } {
  const elasticache = new ElastiCacheClient({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIDOPERATOR', secretAccessKey: 'secret' } });
  const context = {
    stack: { env: 'prod', stackName: 'ballast-prod', alarmPrefix: 'ballast-prod', outputs, source, cacheCluster: true },
    clients: { elasticache },
    cacheUrl: outputs.CacheUrl,
  } as unknown as OpsContext;
  return { context, close: () => elasticache.destroy() };
}

describe('cacheTarget: how the CLI reaches the stack\'s cache', () => {
  const outputs = { CacheUrl: 'rediss://ballast-1a2b3c4d-0abc.serverless.euw1.cache.amazonaws.com:6379', CacheName: 'ballast-1a2b3c4d-5e6f7a8b-0ae8cc519968', CacheUserId: 'ballast-5e6f7a8b-0ae8cc519968' };

  it('on AWS authenticates as the functions\' IAM user with a token signed from the operator\'s credentials', async () => {
    const { context, close } = contextFor('cloudformation', outputs);
    try {
      const target = await cacheTarget(context);
      assert.equal(target.cacheUrl, outputs.CacheUrl);
      assert.equal(target.cluster, true);
      assert.equal(target.auth?.username, outputs.CacheUserId);
      const token = target.auth?.password() ?? '';
      assert.match(token, new RegExp(`^${outputs.CacheName}/\\?Action=connect&`));
      assert.match(token, new RegExp(`User=${outputs.CacheUserId}`));
      assert.match(token, /X-Amz-Credential=AKIDOPERATOR%2F\d{8}%2Feu-west-1%2Felasticache%2Faws4_request/);
      assert.equal(target.auth?.password(), token, 'one token reused until it is due for refresh');
    } finally {
      close();
    }
  });

  it('locally (and for a stack without the IAM outputs) connects without authentication', async () => {
    for (const [source, out] of [['local-file', outputs], ['cloudformation', { CacheUrl: outputs.CacheUrl }]] as const) {
      const { context, close } = contextFor(source, out);
      try {
        assert.equal((await cacheTarget(context)).auth, undefined, source);
      } finally {
        close();
      }
    }
  });
});
