import { FatalError, REASONS, TransientError, type BallastErrorOptions } from '../errors/index.ts';

/**
 * The id cannot name a cache entry (see `CACHE_ID_RULE`). Fatal: the same id will never become
 * valid, and ids outside the rule are never cached, so there is nothing to invalidate.
 */
export class InvalidCacheIdError extends FatalError {
  static { this.prototype.name = 'InvalidCacheIdError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.invalidPayload, message, options);
  }
}

/**
 * Redis/Valkey did not answer (connection down, command timed out, circuit breaker open). Transient:
 * readers fall back to DynamoDB; the invalidator reports the record so the stream retries it.
 */
export class CacheUnavailableError extends TransientError {
  static { this.prototype.name = 'CacheUnavailableError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.dependencyUnavailable, message, options);
  }
}

/**
 * An item of a cached entity on the state table (or a stream image of one) is not what the
 * entity's schema caches (a missing field, a non-integer `version`). A writer bug, never fixed by
 * retrying.
 */
export class MalformedItemError extends FatalError {
  static { this.prototype.name = 'MalformedItemError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.invalidPayload, message, options);
  }
}

/**
 * The cache was configured wrongly (bad option, URL or environment variable): raised once at
 * construction or cold start, naming the field, the value and the fix.
 */
export class CacheConfigurationError extends Error {
  static { this.prototype.name = 'CacheConfigurationError'; }
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
