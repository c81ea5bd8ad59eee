import { ReplyError } from 'ioredis';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { countByReason, MetricUnit, type Observability } from '../observability/index.ts';
import { withDefaults } from '../options/index.ts';
import { entityKey, STATE_TABLE } from '../tables/index.ts';
import { decodeEntry, encodeValue, invalidatedSchemaVersions, itemTraceparent, projectItem, type CachedEntity, type CachedValue } from './entity.ts';
import { annotate, ATTRIBUTES, inSpan, SPANS } from '../tracing/index.ts';
import { CircuitBreaker, type BreakerState, type CircuitBreakerOptions } from './circuit-breaker.ts';
import { connectCacheClient } from './connection.ts';
import { CacheConfigurationError, CacheUnavailableError } from './errors.ts';
import { entityCacheKeys, type EntityCacheKeys } from './keys.ts';
import { CACHE_METRICS, FILL_REFUSALS } from './metrics.ts';
import { reconcileEntity, reconcileReport, type ReconcileOptions, type ReconcileReport } from './reconcile.ts';
import { cacheScripts, FILL_OUTCOMES, type CacheClient, type CacheLookup, type CacheScripts } from './scripts.ts';
import { SingleFlight } from './single-flight.ts';
import { jitteredTtlMs } from './ttl.ts';

export interface EntityCacheOptions {
  /** From `createCacheClient` (lazy, no offline queue, short timeouts). Not closed by the cache. */
  readonly redis: CacheClient;
  readonly documents: DynamoDBDocumentClient;
  /** The state table (`pk = <entity>#<id>`). */
  readonly tableName: string;
  readonly observability: Observability;
  /** The entities this cache serves, invalidates and reconciles (the registry's, see `workloadEntities`). */
  readonly entities: readonly CachedEntity[];
  /** Nominal lifetime of an entry (a bound on staleness if every invalidation were lost). @default 300_000 */
  readonly ttlMs?: number;
  /** Relative TTL spread, in [0, 1), so entries filled together do not expire together. @default 0.1 */
  readonly ttlJitterRatio?: number;
  /**
   * How long a fill ticket is valid (by Redis's clock): a fill whose read began longer ago is
   * dropped (`too-slow`). This is what makes "worst read-fill latency" a number the tombstone TTL can exceed.
   * @default 10_000
   */
  readonly maxFillDelayMs?: number;
  /**
   * How long a tombstone (and the floor of the fill tickets out) outlives its invalidation; at
   * least 2 × `maxFillDelayMs`, so it outlasts every fill ticket out when it was written, with room.
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

/** The answer of {@link EntityCache.get}: the cached value (undefined if the item does not exist) and its source. */
export interface EntityRead<T extends CachedValue = CachedValue> {
  readonly value: T | undefined;
  readonly source: ReadSource;
  /** The W3C `traceparent` of the job whose commit wrote this version, when it was traced. */
  readonly writeTrace?: string;
}

/** One committed change of an item, as the invalidator learns it from the stream. */
export interface EntityChange {
  /** The entity's name (the `pk` prefix). */
  readonly entity: string;
  /** The id after the `#` of the item's `pk`. */
  readonly id: string;
  /** The version to tombstone: the new item's version, or the deleted item's version + 1. */
  readonly version: number;
  /** Epoch ms of the commit (the item's `updatedAt`), for `InvalidationLagMs`. @default - no lag metric */
  readonly committedAtMs?: number;
}

/** A miss's fill ticket: its token (undefined when none was given) and when the read began, by this container's clock. */
interface FillTicket {
  readonly token: string | undefined;
  readonly startedMs: number;
}

const defaults = {
  ttlMs: 300_000, ttlJitterRatio: 0.1, maxFillDelayMs: 10_000, tombstoneTtlMs: 120_000, connectWaitMs: 2_000,
  nowMs: Date.now, random: Math.random,
};

/**
 * Cache-aside reads of the registered entities over Redis/Valkey with stream-driven invalidation.
 * Reads GET the entry; a miss does one strongly consistent table read per key per container
 * (single-flight) and a versioned fill that the tombstones can refuse, so a slow reader never puts
 * an old value back. While Redis fails, a circuit breaker (one per cache, since the entities share
 * the Redis) sends reads straight to the table: callers see no error.
 *
 * @example
 * import { EntityCache, createCacheClient } from '../shared/cache/index.ts';
 * const cache = new EntityCache({ redis: createCacheClient({ url }), documents, tableName, observability, entities: [widgetEntity] });
 * const { value, source } = await cache.get(widgetEntity, 'w-42'); // source: 'hit' | 'miss' | 'bypass'
 */
export class EntityCache {
  readonly #options: Required<Omit<EntityCacheOptions, 'breaker'>>;
  readonly #entities: ReadonlyMap<string, CachedEntity>;
  readonly #scripts: CacheScripts;
  readonly #breaker: CircuitBreaker;
  readonly #flights = new SingleFlight<string, EntityRead>();

  constructor(options: EntityCacheOptions) {
    const merged = withDefaults(defaults, options);
    validate(merged);
    this.#options = merged;
    this.#entities = new Map(merged.entities.map((entity) => [entity.name, entity]));
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

  /** The entities this cache serves, by name. */
  get entities(): ReadonlyMap<string, CachedEntity> {
    return this.#entities;
  }

  /**
   * The item's cached value, from the cache or (on a miss, or while Redis is unavailable) from the table.
   * @throws InvalidCacheIdError for ids that cannot be cached (see `CACHE_ID_RULE`)
   * @throws CacheConfigurationError for an entity this cache was not given
   */
  async get<T extends CachedValue>(of: CachedEntity<T>, id: string): Promise<EntityRead<T>> {
    // The registered declaration decides the keys and the format (it may be a newer schema version).
    const entity = this.#entity(of.name) as CachedEntity<T>;
    const keys = entityCacheKeys(entity.name, id, entity.schemaVersion);
    const joined = this.#flights.has(keys.value);
    let read = await this.#flights.run(keys.value, () => this.#read(entity, id, keys)) as EntityRead<T>;
    // A joiner arrived after the flight's reads were sent: an invalidation may have run between
    // the two, and answering the flight's version would then be a stale read. One tombstone GET
    // (far cheaper than the table read single-flight saves) tells; if it is newer, read again.
    if (joined && read.source !== READ_SOURCES.bypass && (await this.#tombstone(keys) ?? Infinity) > (read.value?.version ?? 0)) {
      read = { ...(await this.#readTableEntry(entity, id)), source: READ_SOURCES.miss };
    }
    const metric = read.source === 'hit' ? CACHE_METRICS.hits : read.source === 'miss' ? CACHE_METRICS.misses : CACHE_METRICS.fallbacks;
    this.#options.observability.metrics.addMetric(metric, MetricUnit.Count, 1);
    return read;
  }

  /**
   * Applies one committed change: tombstones `change.version` for every schema version of the
   * entity still read (`schemaVersion` and `olderSchemaVersions`) or left by a rolled-back newer
   * deployment (`schemaVersion + 1`, see `invalidatedSchemaVersions`) and deletes older entries,
   * atomically per item (one slot, one script call). Idempotent and order-independent.
   * @throws CacheUnavailableError when Redis cannot be reached (the stream should retry)
   * @throws CacheConfigurationError for an entity this cache was not given
   */
  async invalidate(change: EntityChange): Promise<{ tombstoneVersion: number; deleted: number }> {
    const entity = this.#entity(change.entity);
    const keys = invalidatedSchemaVersions(entity).map((version) => entityCacheKeys(entity.name, change.id, version));
    // Not behind the breaker: a breaker that is open for a blip would fail every retry of the
    // stream batch in a row and send live invalidations to the on-failure queue, leaving stale
    // entries. Each attempt waits (bounded) for the connection instead.
    return inSpan(SPANS.tombstone, {}, async (span) => {
      annotate(span, () => ({ [ATTRIBUTES.entity]: change.entity, [ATTRIBUTES.entityId]: change.id, [ATTRIBUTES.version]: change.version }));
      const result = await this.#unguarded('invalidate', () => this.#scripts.invalidate(keys, change.version, this.#options.tombstoneTtlMs));
      const { metrics } = this.#options.observability;
      metrics.addMetric(CACHE_METRICS.invalidations, MetricUnit.Count, 1);
      if (change.committedAtMs !== undefined) {
        const lagMs = Math.max(0, this.#options.nowMs() - change.committedAtMs);
        metrics.addMetric(CACHE_METRICS.invalidationLagMs, MetricUnit.Milliseconds, lagMs);
        annotate(span, () => ({ [ATTRIBUTES.invalidationLagMs]: lagMs }));
      }
      annotate(span, () => ({ 'ballast.tombstone.deleted': result.deleted }));
      return result;
    });
  }

  /**
   * Compares a sample of the current schema version's entries with the table, for one entity or
   * (without `entity`) each in turn; see `reconcileEntity`. The reports add up.
   * @example
   * const report = await cache.reconcile({ sample: 200, repair: true });
   * if (report.mismatchRate > 0) console.warn(report.details);
   */
  async reconcile(options: ReconcileOptions & { readonly entity?: string } = {}): Promise<ReconcileReport> {
    const entities = options.entity === undefined ? [...this.#entities.values()] : [this.#entity(options.entity)];
    await this.#connect();
    try {
      const reports: ReconcileReport[] = [];
      for (const entity of entities) {
        reports.push(await reconcileEntity({
          redis: this.#options.redis,
          scripts: this.#scripts,
          entity,
          readItem: (id) => this.#readTable(entity, id),
          refill: async (id) => void (await this.#readThrough(entity, id, entityCacheKeys(entity.name, id, entity.schemaVersion))),
        }, options));
      }
      return sumReports(reports);
    } catch (error) {
      throw isReplyError(error) ? error : unavailable('reconcile', error);
    }
  }

  #entity(name: string): CachedEntity {
    const entity = this.#entities.get(name);
    if (!entity) throw new CacheConfigurationError(`EntityCache: entity '${name}' is not one of ${[...this.#entities.keys()].join(', ')}; register it with its workload`);
    return entity;
  }

  async #read(entity: CachedEntity, id: string, keys: EntityCacheKeys): Promise<EntityRead> {
    const startedMs = this.#options.nowMs();
    let lookup: CacheLookup;
    try {
      // One round trip: the entry, or on a miss the fill ticket taken with it.
      lookup = await this.#guarded('get', () => this.#scripts.lookup(keys, this.#options.maxFillDelayMs));
    } catch (error) {
      // Unreachable, or an error reply (a bug, or a user whose ACL lacks the ticket's commands:
      // logged): either way the caller gets the table's answer.
      if (!(error instanceof CacheUnavailableError)) this.#options.observability.logger.error('cache read failed', { entity: entity.name, id, error: loggable(error) });
      return { ...(await this.#readTableEntry(entity, id)), source: READ_SOURCES.bypass };
    }
    if (!lookup.hit) return { ...(await this.#readThrough(entity, id, keys, { token: lookup.ticket, startedMs })), source: READ_SOURCES.miss };
    const cached = decodeEntry(entity, lookup.payload, lookup.version);
    if (cached) return { ...cached, source: READ_SOURCES.hit };
    // An entry this release cannot decode (rare): read through with a ticket of its own.
    return { ...(await this.#readThrough(entity, id, keys)), source: READ_SOURCES.miss };
  }

  /**
   * A miss's way to the table: a fill ticket first (the lookup's, or one taken now), then the
   * strongly consistent read, then the fill, which stores only if the ticket outlived the read.
   * Redis losing data in between (a restart or failover empty, FLUSHALL, an eviction) loses the
   * ticket with the tombstones, and the value read may be older than what Redis forgot; an
   * invalidation in between raises the tickets' floor, which refuses an older value even if its
   * tombstone is evicted.
   */
  async #readThrough<T extends CachedValue>(entity: CachedEntity<T>, id: string, keys: EntityCacheKeys, taken?: FillTicket): Promise<{ value: T | undefined; writeTrace?: string }> {
    const ticket = taken ?? { startedMs: this.#options.nowMs(), token: await this.#ticket(keys) };
    const read = await this.#readTableEntry(entity, id);
    if (read.value && ticket.token !== undefined) await this.#fill(keys, ticket.token, read.value, ticket.startedMs, read.writeTrace);
    return read;
  }

  /** A fill ticket valid `maxFillDelayMs`; undefined when Redis cannot give one (the read then fills nothing). */
  async #ticket(keys: EntityCacheKeys): Promise<string | undefined> {
    try {
      return await this.#guarded('ticket', () => this.#scripts.ticket(keys, this.#options.maxFillDelayMs));
    } catch (error) {
      // An error reply (a user whose ACL lacks the ticket's commands, say) would leave every read a
      // miss without a word: logged, as a failed read is.
      if (!(error instanceof CacheUnavailableError)) this.#options.observability.logger.error('cache ticket failed', { key: keys.tickets, error: loggable(error) });
      return undefined;
    }
  }

  /** The entry's tombstone version: 0 when there is none, undefined when Redis cannot say (the joiner then reads the table itself). */
  async #tombstone(keys: EntityCacheKeys): Promise<number | undefined> {
    try {
      return Number(await this.#guarded('tombstone', () => this.#options.redis.get(keys.tombstone))) || 0;
    } catch {
      return undefined;
    }
  }

  /** Fills the entry with its ticket unless the read is too old; never throws (a failed fill only costs a later miss). */
  async #fill(keys: EntityCacheKeys, ticket: string, value: CachedValue, readStartedMs: number, writeTrace?: string): Promise<boolean> {
    const { observability, nowMs, ttlMs, ttlJitterRatio, random, maxFillDelayMs } = this.#options;
    if (nowMs() - readStartedMs > maxFillDelayMs) {
      countByReason(observability, CACHE_METRICS.fillsRefused, FILL_REFUSALS.tooSlow);
      return false;
    }
    try {
      const ttl = jitteredTtlMs(ttlMs, ttlJitterRatio, random);
      // The ticket's deadline is on Redis's clock: a fill that arrives too late is refused, however late.
      const outcome = await this.#guarded('fill', () => this.#scripts.fill(keys, ticket, value.version, encodeValue(value, writeTrace), ttl));
      if (outcome !== FILL_OUTCOMES.stored) countByReason(observability, CACHE_METRICS.fillsRefused, outcome);
      return outcome === FILL_OUTCOMES.stored;
    } catch (error) {
      observability.logger.warn('cache fill failed', { key: keys.value, error: loggable(error) });
      return false;
    }
  }

  async #readTable<T extends CachedValue>(entity: CachedEntity<T>, id: string): Promise<T | undefined> {
    return (await this.#readTableEntry(entity, id)).value;
  }

  /** The item's value and the trace of the write it reflects. */
  async #readTableEntry<T extends CachedValue>(entity: CachedEntity<T>, id: string): Promise<{ value: T | undefined; writeTrace?: string }> {
    const { Item } = await this.#options.documents.send(new GetCommand({
      TableName: this.#options.tableName,
      Key: { [STATE_TABLE.partitionKey]: entityKey(entity.name, id) },
      ConsistentRead: true,
    }));
    if (!Item) return { value: undefined };
    const writeTrace = itemTraceparent(Item);
    return { value: projectItem(entity, Item), ...(writeTrace ? { writeTrace } : {}) };
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

/**
 * An error as a log line should carry it. ioredis attaches the command to an error reply, and a
 * script's command, when sent as EVAL (a connection's first call, or after NOSCRIPT), is its whole
 * Lua text: 1.5 KB in a line, saying nothing the message does not.
 */
function loggable(error: unknown): Error | { name: string; message: string } {
  return isReplyError(error) ? { name: (error as Error).name, message: (error as Error).message } : error as Error;
}

function unavailable(operation: string, cause: unknown): CacheUnavailableError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CacheUnavailableError(`cache ${operation} failed: ${message}`, { cause, context: { operation } });
}

function validate(options: typeof defaults & EntityCacheOptions): void {
  const fail = (field: string, value: unknown, rule: string) => {
    throw new CacheConfigurationError(`EntityCache: ${field} ${rule}, got ${JSON.stringify(value)}`);
  };
  for (const field of ['ttlMs', 'maxFillDelayMs', 'tombstoneTtlMs', 'connectWaitMs'] as const) {
    if (!(options[field] > 0) || !Number.isFinite(options[field])) fail(field, options[field], 'must be a finite number > 0');
  }
  if (!(options.ttlJitterRatio >= 0 && options.ttlJitterRatio < 1)) fail('ttlJitterRatio', options.ttlJitterRatio, 'must be in [0, 1)');
  if (options.tombstoneTtlMs < 2 * options.maxFillDelayMs) {
    fail('tombstoneTtlMs', options.tombstoneTtlMs, `must be >= 2 × maxFillDelayMs (${2 * options.maxFillDelayMs}) so no late fill outlives a tombstone; raise it or lower maxFillDelayMs`);
  }
  if (!options.tableName) fail('tableName', options.tableName, 'is required (the state table)');
  const names = (options.entities ?? []).map((entity) => entity.name);
  if (names.length === 0) fail('entities', names, 'must name at least one cached entity');
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) fail('entities', names, `must name each entity once ('${repeated}' is repeated)`);
}

function sumReports(reports: readonly ReconcileReport[]): ReconcileReport {
  return reconcileReport(reports.reduce((sum, report) => sum + report.sampled, 0), reports.flatMap((report) => report.details));
}
