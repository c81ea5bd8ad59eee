/**
 * The entity cache: schema-versioned keys, Lua compare-and-set fills and tombstone invalidations,
 * single-flight cache-aside reads with a circuit breaker, and reconciliation, for every entity a
 * workload registers (`defineEntity`).
 */
export { EntityCache, READ_SOURCES, type EntityCacheOptions, type EntityChange, type EntityRead, type ReadSource } from './entity-cache.ts';
export {
  decodeEntry, decodeValue, defineEntity, encodeValue, itemTraceparent, invalidatedSchemaVersions, itemVersion, projectItem, type CachedEntity, type CachedValue,
} from './entity.ts';
export { BREAKER_STATES, CircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.ts';
export { connectCacheClient, createCacheClient, type CacheAuth, type CacheConnectionOptions } from './connection.ts';
export { CacheConfigurationError, CacheUnavailableError, InvalidCacheIdError, MalformedItemError } from './errors.ts';
export {
  CACHE_AUTH_MODES, cacheConnectionFromEnv, cacheConnectionOptions, type CacheAuthConfig, type CacheAuthMode, type CacheConnectionConfig,
} from './connection-config.ts';
export { cacheConfigFromEnv, entityCacheFromEnv, type CacheFunctionConfig } from './from-env.ts';
export {
  CacheAuthToken, credentialsFromEnv, elastiCacheIamAuthToken, IAM_AUTH_TOKEN_EXPIRES_SECONDS, iamAuthToken,
  type CacheAuthTokenOptions, type IamAuthTokenOptions, type IamAuthTokenRequest,
} from './iam-auth.ts';
export { CACHE_ID_PATTERN, CACHE_ID_RULE, entityCacheKeys, idOfValueKey, isCacheableId, valueKeyPattern, type EntityCacheKeys } from './keys.ts';
export { CACHE_METRICS, FILL_REFUSALS } from './metrics.ts';
export { canonicalJson, reconcileEntity, reconcileReport, type ReconcileMismatch, type ReconcileOptions, type ReconcileReport } from './reconcile.ts';
export { scanKeys } from './scan.ts';
export { cacheScripts, FILL_OUTCOMES, MAX_TICKETS_PER_ITEM, type CacheClient, type CacheLookup, type CacheScripts, type FillOutcome } from './scripts.ts';
export { SingleFlight } from './single-flight.ts';
export { jitteredTtlMs } from './ttl.ts';
