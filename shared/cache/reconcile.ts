import { decodeValue, type CachedEntity, type CachedValue } from './entity.ts';
import { idOfValueKey, valueKeyPattern } from './keys.ts';
import { scanKeys } from './scan.ts';
import type { CacheClient, CacheScripts } from './scripts.ts';

export interface ReconcileOptions {
  /**
   * How many cache entries to compare with the table (each costs one Redis read and one strongly
   * consistent DynamoDB read), per entity; `Infinity` compares every entry of the schema version.
   * @default 100
   */
  readonly sample?: number;
  /**
   * Repair what differs: the stale entry is deleted (only if it is still the one inspected, so a
   * fresh fill is never lost) and refilled from the table as a read's miss would (a ticket, a
   * table read, the versioned fill).
   * @default false
   */
  readonly repair?: boolean;
}

/** One entry that differed from the table. */
export interface ReconcileMismatch {
  readonly entity: string;
  readonly id: string;
  /** The entry's version, undefined if it had none readable. */
  readonly cachedVersion?: number;
  /** The table item's version, undefined if the item does not exist. */
  readonly tableVersion?: number;
  readonly repaired: boolean;
}

/** What {@link reconcileEntity} found. */
export interface ReconcileReport {
  /** Entries compared. */
  readonly sampled: number;
  readonly mismatches: number;
  readonly repaired: number;
  /** mismatches / sampled; 0 when nothing was sampled. */
  readonly mismatchRate: number;
  /** The mismatched entries (at most `sample`). */
  readonly details: readonly ReconcileMismatch[];
}

/** What reconciliation needs from the cache; `EntityCache.reconcile` supplies it. */
export interface ReconcileDependencies {
  readonly redis: CacheClient;
  readonly scripts: CacheScripts;
  /** The entity whose current schema version's entries are compared. */
  readonly entity: CachedEntity;
  /** A strongly consistent read of the item from the table, projected to its cached value. */
  readonly readItem: (id: string) => Promise<CachedValue | undefined>;
  /** Refills an item's entry as a read's miss would: a ticket, a table read, the fill. */
  readonly refill: (id: string) => Promise<void>;
}

/**
 * Compares a sample of one entity's cache entries of its current schema version with the table
 * and optionally repairs them. An entry matches when the item exists and the entry decodes to
 * exactly the item's current cached value (same version and content). Run it after a Redis
 * outage, when invalidations may have been lost for longer than the stream retains them.
 */
export async function reconcileEntity(deps: ReconcileDependencies, options: ReconcileOptions = {}): Promise<ReconcileReport> {
  const sample = options.sample ?? 100;
  if (!(Number.isInteger(sample) && sample >= 0) && sample !== Infinity) throw new RangeError(`reconcile: sample must be an integer >= 0 or Infinity, got ${sample}`);
  const { entity } = deps;
  const keys = await scanKeys(deps.redis, valueKeyPattern(entity.name, entity.schemaVersion), sample);
  const details: ReconcileMismatch[] = [];
  let sampled = 0;
  for (const key of keys) {
    const id = idOfValueKey(entity.name, key, entity.schemaVersion);
    if (id === undefined) continue;
    const [version = null, payload = null] = await deps.redis.hmget(key, 'version', 'payload');
    if (version === null && payload === null) continue; // expired or evicted since the scan
    sampled += 1;
    const item = await deps.readItem(id);
    const cached = payload === null ? undefined : decodeValue(entity, payload, version);
    if (item && cached && canonicalJson(item) === canonicalJson(cached)) continue;
    const repaired = options.repair === true && (await repair(deps, { id, key, version }, item !== undefined));
    details.push({
      entity: entity.name,
      id,
      ...(cached ? { cachedVersion: cached.version } : {}),
      ...(item ? { tableVersion: item.version } : {}),
      repaired,
    });
  }
  return reconcileReport(sampled, details);
}

/** The report of `sampled` entries compared, `details` the ones that differed (also how per-entity reports add up). */
export function reconcileReport(sampled: number, details: readonly ReconcileMismatch[]): ReconcileReport {
  return {
    sampled,
    mismatches: details.length,
    repaired: details.filter((detail) => detail.repaired).length,
    mismatchRate: sampled === 0 ? 0 : details.length / sampled,
    details,
  };
}

async function repair(deps: ReconcileDependencies, entry: { id: string; key: string; version: string | null }, itemExists: boolean): Promise<boolean> {
  const evicted = await deps.scripts.evictIfVersion(entry.key, entry.version ?? undefined);
  if (itemExists) await deps.refill(entry.id);
  return evicted;
}

/** JSON with object keys sorted at every level: DynamoDB does not keep a map's key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner);
}
