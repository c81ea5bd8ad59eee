/**
 * The account cache: schema-versioned keys, Lua compare-and-set fills and tombstone
 * invalidations, single-flight cache-aside reads with a circuit breaker, and reconciliation.
 */
export { AccountCache, READ_SOURCES, type AccountCacheOptions, type AccountChange, type AccountRead, type ReadSource } from './account-cache.ts';
export { decodeAccount, encodeAccount, itemVersion, toCachedAccount, type CachedAccount } from './account-entry.ts';
export { BREAKER_STATES, CircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.ts';
export { connectCacheClient, createCacheClient, type CacheAuth, type CacheConnectionOptions } from './connection.ts';
export { CacheConfigurationError, CacheUnavailableError, InvalidAccountIdError, MalformedAccountError } from './errors.ts';
export {
  accountCacheFromEnv, CACHE_AUTH_MODES, cacheConfigFromEnv, cacheConnectionFromEnv, cacheConnectionOptions,
  type CacheAuthConfig, type CacheAuthMode, type CacheConnectionConfig, type CacheFunctionConfig,
} from './from-env.ts';
export {
  CacheAuthToken, credentialsFromEnv, elastiCacheIamAuthToken, IAM_AUTH_TOKEN_EXPIRES_SECONDS, iamAuthToken,
  type CacheAuthTokenOptions, type IamAuthTokenOptions, type IamAuthTokenRequest,
} from './iam-auth.ts';
export {
  ACCOUNT_ID_PATTERN, ACCOUNT_ID_RULE, CACHE_SCHEMA_VERSION, OLDER_CACHE_SCHEMA_VERSIONS,
  accountCacheKeys, accountIdOfKey, accountValueKeyPattern, isCacheableAccountId, type AccountCacheKeys,
} from './keys.ts';
export { CACHE_METRICS, FILL_REFUSALS } from './metrics.ts';
export { canonicalJson, reconcileAccounts, type ReconcileMismatch, type ReconcileOptions, type ReconcileReport } from './reconcile.ts';
export { scanKeys } from './scan.ts';
export { cacheScripts, FILL_OUTCOMES, type CacheClient, type CacheScripts, type FillOutcome } from './scripts.ts';
export { SingleFlight } from './single-flight.ts';
export { jitteredTtlMs } from './ttl.ts';
