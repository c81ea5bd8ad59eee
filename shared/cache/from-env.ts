import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientConfig } from '../aws/index.ts';
import { createObservability, type Observability } from '../observability/index.ts';
import { EntityCache } from './entity-cache.ts';
import type { CachedEntity } from './entity.ts';
import { createCacheClient } from './connection.ts';
import { cacheConnectionFromEnv, cacheConnectionOptions, type CacheConnectionConfig } from './connection-config.ts';
import { CacheConfigurationError } from './errors.ts';

/** The settings of a function that uses the entity cache, all from environment variables. */
export interface CacheFunctionConfig extends CacheConnectionConfig {
  /** `STATE_TABLE_NAME`. */
  readonly stateTableName: string;
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
  const config: CacheFunctionConfig = {
    stateTableName: text('STATE_TABLE_NAME'),
    ...cacheConnectionFromEnv(env, problems),
    workerVersion: text('WORKER_VERSION', env.AWS_LAMBDA_FUNCTION_VERSION),
  };
  if (problems.length > 0) throw new CacheConfigurationError(`cache function configuration: ${problems.join('; ')}`);
  return config;
}

/**
 * The per-container composition of a cache-using function: config from the environment, one
 * DynamoDB document client, one Redis client and one {@link EntityCache} over `entities`. Call it
 * once per container (a handler factory called at module scope of the Lambda entry).
 *
 * @example
 * const { cache, observability } = entityCacheFromEnv(workloadEntities(registry.workloads));
 */
export function entityCacheFromEnv(
  entities: readonly CachedEntity[], env: NodeJS.ProcessEnv = process.env,
): { cache: EntityCache; observability: Observability } {
  const config = cacheConfigFromEnv(env);
  const observability = createObservability({ workerVersion: config.workerVersion });
  const redis = createCacheClient({
    ...cacheConnectionOptions(config, env),
    // Connection errors repeat on every reconnect of an outage (debug); refused credentials are a
    // misconfiguration (a missing elasticache:Connect, a wrong user) that the breaker would hide.
    onError: (error) => (/WRONGPASS|NOPERM|NOAUTH/.test(error.message)
      ? observability.logger.warn('cache refused the credentials', { error })
      : observability.logger.debug('cache connection error', { error })),
  });
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(awsClientConfig(env)));
  return { cache: new EntityCache({ redis, documents, tableName: config.stateTableName, observability, entities }), observability };
}
