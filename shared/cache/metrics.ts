/**
 * Metric names the cache emits through the observability layer (namespace `Ballast`, dimension
 * `workerVersion`; the ones marked "by reason" also carry a `reason` dimension).
 * Hit ratio = CacheHits / (CacheHits + CacheMisses + CacheFallbacks).
 */
export const CACHE_METRICS = {
  /** A read answered from Redis. */
  hits: 'CacheHits',
  /** A read that found no entry and went to the table (then tried to fill). */
  misses: 'CacheMisses',
  /** A read answered from the table without the cache: breaker open or Redis failed. */
  fallbacks: 'CacheFallbacks',
  /** A fill that did not store, by reason: stale-value, stale-tombstone, ticket-gone or too-slow. */
  fillsRefused: 'CacheFillsRefused',
  /** A tombstone written (per item change applied). */
  invalidations: 'CacheInvalidations',
  /** From the committed item's own `updatedAt` to the moment its tombstone was written, in ms. */
  invalidationLagMs: 'InvalidationLagMs',
  /** A stream record the invalidator skipped, by reason (e.g. malformed-record). */
  invalidationsSkipped: 'CacheInvalidationsSkipped',
  /**
   * Stream records of a failed invalidation batch (from the invalidator's on-failure queue) read
   * back from the stream and applied again by the invalidation repair.
   */
  invalidationsRepaired: 'CacheInvalidationsRepaired',
  /**
   * A failed invalidation batch the repair could not read back, repaired instead by a full
   * reconcile of the cache, by reason: a `RANGE_UNAVAILABLE` reason (records-trimmed,
   * iterator-expired, stream-or-shard-gone, range-invalid, range-incomplete) or unreadable-message.
   */
  invalidationRepairFallbacks: 'CacheInvalidationRepairFallbacks',
  /** A circuit breaker state change, by reason = the new state (open, half-open, closed). */
  breakerTransitions: 'CacheBreakerTransitions',
} as const;

/** Reasons on `CacheFillsRefused` besides the Lua script's own (`FILL_OUTCOMES`). */
export const FILL_REFUSALS = {
  /**
   * The table read is older than `maxFillDelayMs` by the reader's clock: its ticket has expired,
   * so the fill is not even sent (the script would refuse it as `too-slow`).
   */
  tooSlow: 'too-slow',
} as const;
