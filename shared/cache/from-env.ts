import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientConfig } from '../aws/index.ts';
import { createObservability, type Observability } from '../observability/index.ts';
import { AccountCache } from './account-cache.ts';
import { createCacheClient } from './connection.ts';
import { CacheConfigurationError } from './errors.ts';

/** The settings of a function that uses the account cache, all from environment variables. */
export interface CacheFunctionConfig {
  /** `STATE_TABLE_NAME`. */
  readonly stateTableName: string;
  /** `BALLAST_CACHE_URL`: `redis://…` or `rediss://…` (TLS). */
  readonly cacheUrl: string;
  /** `BALLAST_CACHE_CLUSTER`: `true` for cluster mode (ElastiCache Serverless). @default false */
  readonly cacheCluster: boolean;
  /** `WORKER_VERSION`, else `AWS_LAMBDA_FUNCTION_VERSION`. */
  readonly workerVersion: string;
}

/**
 * Reads {@link CacheFunctionConfig} from `env`, failing at cold start with every missing or
 * malformed variable named, rather than on the first request.
 */
export function cacheConfigFromEnv(env: NodeJS.ProcessEnv = process.env): CacheFunctionConfig {
  const problems: string[] = [];
  const text = (name: string, fallback?: string) => {
    const value = env[name] || fallback;
    if (!value) problems.push(`${name} is required`);
    return value ?? '';
  };
  const cluster = env.BALLAST_CACHE_CLUSTER ?? '';
  if (!['', 'true', 'false'].includes(cluster)) problems.push(`BALLAST_CACHE_CLUSTER must be 'true' or 'false', got '${cluster}'`);
  const config: CacheFunctionConfig = {
    stateTableName: text('STATE_TABLE_NAME'),
    cacheUrl: text('BALLAST_CACHE_URL'),
    cacheCluster: cluster === 'true',
    workerVersion: text('WORKER_VERSION', env.AWS_LAMBDA_FUNCTION_VERSION),
  };
  if (problems.length > 0) throw new CacheConfigurationError(`cache function configuration: ${problems.join('; ')}`);
  return config;
}

/**
 * The per-container composition of a cache-using function: config from the environment, one
 * DynamoDB document client, one Redis client and one {@link AccountCache}. Call it at module scope
 * of a Lambda entry point, so everything is created once per container.
 *
 * @example
 * import { accountCacheFromEnv } from '../../shared/cache/index.ts';
 * const { cache, observability } = accountCacheFromEnv();
 */
export function accountCacheFromEnv(env: NodeJS.ProcessEnv = process.env): { cache: AccountCache; observability: Observability } {
  const config = cacheConfigFromEnv(env);
  const observability = createObservability({ workerVersion: config.workerVersion });
  const redis = createCacheClient({
    url: config.cacheUrl,
    cluster: config.cacheCluster,
    onError: (error) => observability.logger.debug('cache connection error', { error }),
  });
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(awsClientConfig(env)));
  return { cache: new AccountCache({ redis, documents, tableName: config.stateTableName, observability }), observability };
}
