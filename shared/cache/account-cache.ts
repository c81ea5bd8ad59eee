import { ReplyError } from 'ioredis';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { accountKey } from '../../workloads/accounts/schemas.ts';
import { countByReason, MetricUnit, type Observability } from '../observability/index.ts';
import { withDefaults } from '../options/index.ts';
import { STATE_TABLE } from '../tables/index.ts';
import { encodeAccount, decodeAccount, toCachedAccount, type CachedAccount } from './account-entry.ts';
import { CircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.ts';
import { connectCacheClient } from './connection.ts';
import { CacheConfigurationError, CacheUnavailableError } from './errors.ts';
import { accountCacheKeys, CACHE_SCHEMA_VERSION, OLDER_CACHE_SCHEMA_VERSIONS, type AccountCacheKeys } from './keys.ts';
import { CACHE_METRICS, FILL_REFUSALS } from './metrics.ts';
import { reconcileAccounts, type ReconcileOptions, type ReconcileReport } from './reconcile.ts';
import { cacheScripts, FILL_OUTCOMES, type CacheClient, type CacheScripts } from './scripts.ts';
import { SingleFlight } from './single-flight.ts';
import { jitteredTtlMs } from './ttl.ts';

export interface AccountCacheOptions {
  /** From `createCacheClient` (lazy, no offline queue, short timeouts). Not closed by the cache. */
  readonly redis: CacheClient;
  readonly documents: DynamoDBDocumentClient;
  /** The state table (`pk = account#<id>`). */
  readonly tableName: string;
  readonly observability: Observability;
  /** The cached format this reader reads and fills. @default CACHE_SCHEMA_VERSION */
  readonly schemaVersion?: number;
  /** Schema versions an invalidation tombstones. @default [schemaVersion, ...OLDER_CACHE_SCHEMA_VERSIONS] */
  readonly invalidatedSchemaVersions?: readonly number[];
  /** Nominal lifetime of an entry (a bound on staleness if every invalidation were lost). @default 300_000 */
  readonly ttlMs?: number;
  /** Relative TTL spread, in [0, 1), so entries filled together do not expire together. @default 0.1 */
  readonly ttlJitterRatio?: number;
  /**
   * The longest a table read may be old when its fill starts; older fills are dropped (`too-slow`).
   * This is what makes "worst read-fill latency" a number the tombstone TTL can exceed.
   * @default 10_000
   */
  readonly maxFillDelayMs?: number;
  /**
   * How long a tombstone outlives its invalidation; must be at least 2 × `maxFillDelayMs` (the
   * second half covers the fill's own trip to Redis), so no fill older than the tombstone can land.
   * @default 120_000
   */
  readonly tombstoneTtlMs?: number;
  /**
   * How long a call waits for a connection attempt in progress (the first one of a container, or
   * a reconnect under way) before it counts as a failure and is served from the table.
   * @default 2_000
   */
  readonly connectWaitMs?: number;
  /** @default - { failureThreshold: 3, openMs: 5_000 } (see `CircuitBreakerOptions`) */
  readonly breaker?: Pick<CircuitBreakerOptions, 'failureThreshold' | 'openMs'>;
  /** @default Date.now */
  readonly nowMs?: () => number;
  /** Source of TTL jitter, in [0, 1). @default Math.random */
  readonly random?: () => number;
}

/** How a read was answered; the read API returns it as the `x-cache` header. */
export const READ_SOURCES = { hit: 'hit', miss: 'miss', bypass: 'bypass' } as const;
export type ReadSource = (typeof READ_SOURCES)[keyof typeof READ_SOURCES];

/** The answer of {@link AccountCache.get}: the account (undefined if it does not exist) and its source. */
export interface AccountRead {
  readonly account: CachedAccount | undefined;
  readonly source: ReadSource;
}

/** One committed change of an account, as the invalidator learns it from the stream. */
export interface AccountChange {
  readonly accountId: string;
  /** The version to tombstone: the new item's version, or the deleted item's version + 1. */
  readonly version: number;
  /** Epoch ms of the commit (the item's `updatedAt`), for `InvalidationLagMs`. @default - no lag metric */
  readonly committedAtMs?: number;
}

const defaults = {
  schemaVersion: CACHE_SCHEMA_VERSION, ttlMs: 300_000, ttlJitterRatio: 0.1, maxFillDelayMs: 10_000, tombstoneTtlMs: 120_000, connectWaitMs: 2_000,
  nowMs: Date.now, random: Math.random,
};

/**
 * Cache-aside reads of accounts over Redis/Valkey with stream-driven invalidation. Reads GET the
 * entry; a miss does one strongly consistent table read per key per container (single-flight) and
 * a versioned fill that the tombstones can refuse, so a slow reader never puts an old value back.
 * While Redis fails, a circuit breaker sends reads straight to the table: callers see no error.
 *
 * @example
 * import { AccountCache, createCacheClient } from '../shared/cache/index.ts';
 * const cache = new AccountCache({ redis: createCacheClient({ url }), documents, tableName, observability });
 * const { account, source } = await cache.get('acc-42'); // source: 'hit' | 'miss' | 'bypass'
 */
export class AccountCache {
  readonly schemaVersion: number;
  readonly #options: Required<Omit<AccountCacheOptions, 'breaker' | 'invalidatedSchemaVersions'>>;
  readonly #invalidatedSchemaVersions: readonly number[];
  readonly #scripts: CacheScripts;
  readonly #breaker: CircuitBreaker;
  readonly #flights = new SingleFlight<string, AccountRead>();

  constructor(options: AccountCacheOptions) {
    const merged = withDefaults(defaults, options);
    validate(merged);
    this.#options = merged;
    this.schemaVersion = merged.schemaVersion;
    this.#invalidatedSchemaVersions = [...new Set(merged.invalidatedSchemaVersions ?? [merged.schemaVersion, ...OLDER_CACHE_SCHEMA_VERSIONS])];
    this.#scripts = cacheScripts(merged.redis);
    this.#breaker = new CircuitBreaker({
      ...merged.breaker,
      nowMs: merged.nowMs,
      onStateChange: ({ from, to }) => {
        countByReason(merged.observability, CACHE_METRICS.breakerTransitions, to);
        merged.observability.logger.warn('cache circuit breaker changed state', { from, to });
      },
    });
  }

  /** The circuit breaker's state: `open` means reads bypass Redis. */
  get breakerState(): BreakerState {
    return this.#breaker.state;
  }

  /**
   * The account, from the cache or (on a miss, or while Redis is unavailable) from the table.
   * @throws InvalidAccountIdError for ids that cannot be cached (see `ACCOUNT_ID_RULE`)
   */
  async get(accountId: string): Promise<AccountRead> {
    const keys = accountCacheKeys(accountId, this.schemaVersion);
    const joined = this.#flights.has(accountId);
    let read = await this.#flights.run(accountId, () => this.#read(accountId, keys));
    // A joiner arrived after the flight's reads were sent: an invalidation may have run between
    // the two, and answering the flight's version would then be a stale read. One tombstone GET
    // (far cheaper than the table read single-flight saves) tells; if it is newer, read again.
    if (joined && read.source !== READ_SOURCES.bypass && (await this.#tombstone(keys)) > (read.account?.version ?? 0)) {
      read = { account: await this.#readTable(accountId), source: READ_SOURCES.miss };
    }
    const metric = read.source === 'hit' ? CACHE_METRICS.hits : read.source === 'miss' ? CACHE_METRICS.misses : CACHE_METRICS.fallbacks;
    this.#options.observability.metrics.addMetric(metric, MetricUnit.Count, 1);
    return read;
  }

  /**
   * Applies one committed change: tombstones `change.version` for every invalidated schema version
   * and deletes older entries, atomically per account. Idempotent and order-independent.
   * @throws CacheUnavailableError when Redis cannot be reached (the stream should retry)
   */
  async invalidate(change: AccountChange): Promise<{ tombstoneVersion: number; deleted: number }> {
    const keys = this.#invalidatedSchemaVersions.map((version) => accountCacheKeys(change.accountId, version));
    // Not behind the breaker: a breaker that is open for a blip would fail every retry of the
    // stream batch in a row and send live invalidations to the on-failure queue, leaving stale
    // entries. Each attempt waits (bounded) for the connection instead.
    const result = await this.#unguarded('invalidate', () => this.#scripts.invalidate(keys, change.version, this.#options.tombstoneTtlMs));
    const { metrics } = this.#options.observability;
    metrics.addMetric(CACHE_METRICS.invalidations, MetricUnit.Count, 1);
    if (change.committedAtMs !== undefined) {
      metrics.addMetric(CACHE_METRICS.invalidationLagMs, MetricUnit.Milliseconds, Math.max(0, this.#options.nowMs() - change.committedAtMs));
    }
    return result;
  }

  /**
   * Compares a sample of this schema version's entries with the table; see `reconcileAccounts`.
   * @example
   * const report = await cache.reconcile({ sample: 200, repair: true });
   * if (report.mismatchRate > 0) console.warn(report.details);
   */
  async reconcile(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    await this.#connect();
    try {
      return await reconcileAccounts({
        redis: this.#options.redis,
        scripts: this.#scripts,
        schemaVersion: this.schemaVersion,
        readAccount: (accountId) => this.#readTable(accountId),
        fill: (accountId, account, readStartedMs) => this.#fill(accountCacheKeys(accountId, this.schemaVersion), account, readStartedMs),
        nowMs: this.#options.nowMs,
      }, options);
    } catch (error) {
      throw isReplyError(error) ? error : unavailable('reconcile', error);
    }
  }

  async #read(accountId: string, keys: AccountCacheKeys): Promise<AccountRead> {
    let entry: (string | null)[];
    try {
      entry = await this.#guarded('get', () => this.#options.redis.hmget(keys.value, 'version', 'payload'));
    } catch (error) {
      // Unreachable, or an error reply (a bug, logged): either way the caller gets the table's answer.
      if (!(error instanceof CacheUnavailableError)) this.#options.observability.logger.error('cache read failed', { accountId, error: error as Error });
      return { account: await this.#readTable(accountId), source: READ_SOURCES.bypass };
    }
    const [version = null, payload = null] = entry;
    const cached = payload === null ? undefined : decodeAccount(payload, version);
    if (cached) return { account: cached, source: READ_SOURCES.hit };
    const readStartedMs = this.#options.nowMs();
    const account = await this.#readTable(accountId);
    if (account) await this.#fill(keys, account, readStartedMs);
    return { account, source: READ_SOURCES.miss };
  }

  /** The entry's tombstone version (0 when there is none, or Redis cannot say: the flight's answer stands). */
  async #tombstone(keys: AccountCacheKeys): Promise<number> {
    try {
      return Number(await this.#guarded('tombstone', () => this.#options.redis.get(keys.tombstone))) || 0;
    } catch {
      return 0;
    }
  }

  /** Fills the entry unless the read is too old; never throws (a failed fill only costs a later miss). */
  async #fill(keys: AccountCacheKeys, account: CachedAccount, readStartedMs: number): Promise<boolean> {
    const { observability, nowMs, ttlMs, ttlJitterRatio, random, maxFillDelayMs } = this.#options;
    if (nowMs() - readStartedMs > maxFillDelayMs) {
      countByReason(observability, CACHE_METRICS.fillsRefused, FILL_REFUSALS.tooSlow);
      return false;
    }
    try {
      const ttl = jitteredTtlMs(ttlMs, ttlJitterRatio, random);
      // The deadline travels with the command: Redis refuses it if it arrives too late, however late.
      const outcome = await this.#guarded('fill', () => this.#scripts.fill(keys, account.version, encodeAccount(account), ttl, readStartedMs + maxFillDelayMs));
      if (outcome !== FILL_OUTCOMES.stored) countByReason(observability, CACHE_METRICS.fillsRefused, outcome);
      return outcome === FILL_OUTCOMES.stored;
    } catch (error) {
      observability.logger.warn('cache fill failed', { accountId: account.accountId, error: error as Error });
      return false;
    }
  }

  async #readTable(accountId: string): Promise<CachedAccount | undefined> {
    const { Item } = await this.#options.documents.send(new GetCommand({
      TableName: this.#options.tableName,
      Key: { [STATE_TABLE.partitionKey]: accountKey(accountId) },
      ConsistentRead: true,
    }));
    return Item ? toCachedAccount(Item) : undefined;
  }

  /**
   * Runs one Redis operation behind the breaker. Connection failures and timeouts count against
   * the breaker and become {@link CacheUnavailableError}; Redis's own error replies (a bug, not an
   * outage) count as an answer and are rethrown as they are.
   */
  async #guarded<T>(operation: string, call: () => Promise<T>): Promise<T> {
    if (!this.#breaker.tryAcquire()) {
      throw new CacheUnavailableError(`cache ${operation} skipped: circuit breaker is open`, { context: { operation, breaker: 'open' } });
    }
    try {
      await this.#connect();
      const result = await call();
      this.#breaker.onSuccess();
      return result;
    } catch (error) {
      if (isReplyError(error)) {
        this.#breaker.onSuccess();
        throw error;
      }
      this.#breaker.onFailure();
      throw unavailable(operation, error);
    }
  }

  /** One Redis operation without the breaker; failures still become {@link CacheUnavailableError}. */
  async #unguarded<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      await this.#connect();
      return await call();
    } catch (error) {
      if (isReplyError(error)) throw error;
      throw unavailable(operation, error);
    }
  }

  #connect(): Promise<void> {
    return connectCacheClient(this.#options.redis, this.#options.connectWaitMs);
  }
}

function isReplyError(error: unknown): boolean {
  return error instanceof (ReplyError as new () => Error);
}

function unavailable(operation: string, cause: unknown): CacheUnavailableError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CacheUnavailableError(`cache ${operation} failed: ${message}`, { cause, context: { operation } });
}

function validate(options: typeof defaults & AccountCacheOptions): void {
  const fail = (field: string, value: unknown, rule: string) => {
    throw new CacheConfigurationError(`AccountCache: ${field} ${rule}, got ${JSON.stringify(value)}`);
  };
  for (const field of ['ttlMs', 'maxFillDelayMs', 'tombstoneTtlMs', 'connectWaitMs'] as const) {
    if (!(options[field] > 0) || !Number.isFinite(options[field])) fail(field, options[field], 'must be a finite number > 0');
  }
  if (!(options.ttlJitterRatio >= 0 && options.ttlJitterRatio < 1)) fail('ttlJitterRatio', options.ttlJitterRatio, 'must be in [0, 1)');
  if (options.tombstoneTtlMs < 2 * options.maxFillDelayMs) {
    fail('tombstoneTtlMs', options.tombstoneTtlMs, `must be >= 2 × maxFillDelayMs (${2 * options.maxFillDelayMs}) so no late fill outlives a tombstone; raise it or lower maxFillDelayMs`);
  }
  if (!options.tableName) fail('tableName', options.tableName, 'is required (the state table)');
  for (const version of [options.schemaVersion, ...(options.invalidatedSchemaVersions ?? [])]) {
    if (!Number.isInteger(version) || version < 1) fail('schemaVersion', version, 'must be an integer >= 1');
  }
}
