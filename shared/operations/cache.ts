import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AccountCache, createCacheClient, type ReconcileReport } from '../cache/index.ts';
import { createObservability } from '../observability/index.ts';
import { StackUnreachableError } from './errors.ts';

export interface CacheCheckOptions {
  readonly cacheUrl: string | undefined;
  readonly cluster: boolean;
  readonly documents: DynamoDBDocumentClient;
  readonly stateTableName: string;
  /** @default 100 */
  readonly sample?: number;
  /** @default false */
  readonly repair?: boolean;
}

/**
 * Samples cache entries against the state table through `AccountCache.reconcile` (and repairs
 * them when asked). The cache must be reachable from here: on AWS, run it inside the VPC.
 *
 * @throws StackUnreachableError when there is no cache URL or the cache does not answer
 */
export async function checkCache(options: CacheCheckOptions): Promise<ReconcileReport> {
  if (!options.cacheUrl) throw new StackUnreachableError('the stack has no CacheUrl output and BALLAST_CACHE_URL is not set');
  const redis = createCacheClient({ url: options.cacheUrl, cluster: options.cluster, connectionName: 'ballast-cli', onError: () => undefined });
  const cache = new AccountCache({
    redis,
    documents: options.documents,
    tableName: options.stateTableName,
    observability: createObservability({ workerVersion: 'ballast-cli' }),
  });
  try {
    return await cache.reconcile({ sample: options.sample ?? 100, repair: options.repair ?? false });
  } catch (error) {
    throw new StackUnreachableError(`cache ${options.cacheUrl} (${(error as Error).name}: ${(error as Error).message}): on AWS, run from inside the stack's VPC`, { cause: error });
  } finally {
    redis.disconnect();
  }
}
