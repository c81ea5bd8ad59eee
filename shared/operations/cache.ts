import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CacheConfigurationError, createCacheClient, EntityCache, iamAuthToken, type CacheAuth, type CachedEntity, type ReconcileReport } from '../cache/index.ts';
import { createObservability } from '../observability/index.ts';
import type { OpsContext } from './context.ts';
import { StackUnreachableError } from './errors.ts';

/** Where the stack's cache is and how to authenticate to it. */
export interface CacheTarget {
  readonly cacheUrl: string | undefined;
  readonly cluster: boolean;
  /** @default - no authentication (the local redis-server) */
  readonly auth?: CacheAuth;
}

/**
 * The stack's cache as the operator reaches it: on AWS (the `CacheName` and `CacheUserId` outputs)
 * as the functions' IAM-enabled user, with tokens signed from the operator's own credentials — who
 * needs `elasticache:Connect` on the cache and on that user — and run from inside the stack's VPC.
 */
export async function cacheTarget(context: OpsContext): Promise<CacheTarget> {
  const { CacheName: cacheName, CacheUserId: userId } = context.stack.outputs;
  const base = { cacheUrl: context.cacheUrl, cluster: context.stack.cacheCluster };
  // The local cloud's redis-server knows no IAM (its functions run with BALLAST_CACHE_AUTH=none).
  if (!cacheName || !userId || context.stack.source === 'local-file') return base;
  const config = context.clients.elasticache.config;
  const [credentials, region] = await Promise.all([config.credentials(), config.region()]);
  const token = iamAuthToken({ cacheName, userId, region, credentials: () => credentials });
  return { ...base, auth: { username: userId, password: () => token.token() } };
}

export interface CacheCheckOptions extends CacheTarget {
  readonly documents: DynamoDBDocumentClient;
  readonly stateTableName: string;
  /** The registered cached entities (`workloadEntities(WORKLOADS)`). */
  readonly entities: readonly CachedEntity[];
  /** Samples this entity only. @default - every one of `entities`, `sample` entries each */
  readonly entity?: string;
  /** @default 100 */
  readonly sample?: number;
  /** @default false */
  readonly repair?: boolean;
}

/**
 * Samples cache entries against the state table through `EntityCache.reconcile` (and repairs
 * them when asked). The cache must be reachable from here: on AWS, run it inside the VPC.
 *
 * @throws CacheConfigurationError when `entity` is not one of `entities`
 * @throws StackUnreachableError when there is no cache URL or the cache does not answer
 */
export async function checkCache(options: CacheCheckOptions): Promise<ReconcileReport> {
  const names = options.entities.map((entity) => entity.name);
  if (options.entity !== undefined && !names.includes(options.entity)) {
    throw new CacheConfigurationError(`no cached entity '${options.entity}': the registered ones are ${names.join(', ') || 'none'}`);
  }
  if (!options.cacheUrl) throw new StackUnreachableError('the stack has no CacheUrl output and BALLAST_CACHE_URL is not set');
  const redis = createCacheClient({
    url: options.cacheUrl, cluster: options.cluster, auth: options.auth, connectionName: 'ballast-cli', onError: () => undefined,
  });
  const cache = new EntityCache({
    redis,
    documents: options.documents,
    tableName: options.stateTableName,
    observability: createObservability({ workerVersion: 'ballast-cli' }),
    entities: options.entities,
  });
  try {
    return await cache.reconcile({ entity: options.entity, sample: options.sample ?? 100, repair: options.repair ?? false });
  } catch (error) {
    throw new StackUnreachableError(`cache ${options.cacheUrl} (${(error as Error).name}: ${(error as Error).message}): on AWS, run from inside the stack's VPC`, { cause: error });
  } finally {
    redis.disconnect();
  }
}
