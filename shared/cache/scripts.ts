import type { Cluster, Redis } from 'ioredis';
import type { EntityCacheKeys } from './keys.ts';

/** A standalone or cluster connection: everything in `shared/cache` works with both. */
export type CacheClient = Redis | Cluster;

/**
 * invalidate(KEYS = value₁, tomb₁[, value₂, tomb₂ …]; ARGV = version, tombstoneTtlMs)
 *
 * For each (value, tombstone) pair — several schema versions of one item, all in one slot:
 * the tombstone becomes max(existing, version) and lives at least `tombstoneTtlMs` more; the value
 * is deleted when its version is below the tombstone (or it has no readable version). Applying it
 * twice, or an older one after a newer one, leaves the same state: idempotent, order-independent.
 * The tombstone keeps the caller's decimal string (Lua would print big numbers as 1e+15).
 * Returns { tombstone version of the first pair, values deleted }.
 */
const INVALIDATE_LUA = `
local version = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local firstTomb, deleted = nil, 0
for i = 1, #KEYS, 2 do
  local valueKey, tombKey = KEYS[i], KEYS[i + 1]
  local existing = redis.call('GET', tombKey)
  local tombText = ARGV[1]
  if existing and tonumber(existing) and tonumber(existing) > version then tombText = existing end
  local keep = ttl
  local remaining = redis.call('PTTL', tombKey)
  if remaining > keep then keep = remaining end
  redis.call('SET', tombKey, tombText, 'PX', keep)
  local tomb = tonumber(tombText)
  if firstTomb == nil then firstTomb = tomb end
  local cached = tonumber(redis.call('HGET', valueKey, 'version'))
  if cached == nil or cached < tomb then deleted = deleted + redis.call('DEL', valueKey) end
end
return {firstTomb, deleted}
`;

/**
 * fill(KEYS = value, tomb; ARGV = version, payload, ttlMs)
 *
 * Stores { version, payload } with a TTL only when the version is at least the tombstone's (an
 * invalidation of this version or a newer one has not been seen) and strictly newer than the
 * stored value's (an equal one is already there). Returns {1, 'stored'} or {0, reason}.
 */
const FILL_LUA = `
if ARGV[4] and ARGV[4] ~= '' then
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[4]) then return {0, 'too-slow'} end
end
local version = tonumber(ARGV[1])
local tomb = tonumber(redis.call('GET', KEYS[2]))
if tomb and version < tomb then return {0, 'stale-tombstone'} end
local cached = tonumber(redis.call('HGET', KEYS[1], 'version'))
if cached and version <= cached then return {0, 'stale-value'} end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'payload', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, 'stored'}
`;

/**
 * evictIfVersion(KEYS = value; ARGV = expected version text, '' for "no version field")
 *
 * Deletes the value only if it still carries the version it was inspected with, so a repair never
 * deletes an entry a reader filled in the meantime. Returns 1 if deleted.
 */
const EVICT_IF_VERSION_LUA = `
local cached = redis.call('HGET', KEYS[1], 'version')
if redis.call('EXISTS', KEYS[1]) == 1 and (cached or '') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** Why a fill did or did not store. */
export const FILL_OUTCOMES = {
  stored: 'stored',
  /** The stored value is as new or newer. */
  staleValue: 'stale-value',
  /** An invalidation of this version or a newer one was applied (the value was read before a commit). */
  staleTombstone: 'stale-tombstone',
  /**
   * The fill reached Redis after its deadline (checked against Redis's own clock): a tombstone
   * written after its table read may already have expired, so it must not store. This also covers
   * a command delayed in the network long after the client gave up on it.
   */
  tooSlow: 'too-slow',
} as const;
export type FillOutcome = (typeof FILL_OUTCOMES)[keyof typeof FILL_OUTCOMES];

/** Typed wrappers over the cache's Lua scripts (EVALSHA, with ioredis falling back to EVAL on NOSCRIPT). */
export interface CacheScripts {
  /** See `INVALIDATE_LUA`: every pair in `keys` must belong to one item (one slot). */
  invalidate(keys: readonly EntityCacheKeys[], version: number, tombstoneTtlMs: number): Promise<{ tombstoneVersion: number; deleted: number }>;
  /** See `FILL_LUA`. */
  fill(keys: EntityCacheKeys, version: number, payload: string, ttlMs: number, deadlineEpochMs?: number): Promise<FillOutcome>;
  /** See `EVICT_IF_VERSION_LUA`. */
  evictIfVersion(valueKey: string, expectedVersion: string | undefined): Promise<boolean>;
}

type ScriptReply = [number | string, number | string];
interface ScriptCommands {
  ballastCacheInvalidate(numberOfKeys: number, ...args: (string | number)[]): Promise<ScriptReply>;
  ballastCacheFill(...args: (string | number)[]): Promise<ScriptReply>;
  ballastCacheEvictIfVersion(...args: (string | number)[]): Promise<number>;
}

/**
 * Registers the cache's Lua scripts on `client` with `defineCommand` (so calls use EVALSHA and
 * ioredis resends the script on NOSCRIPT, e.g. after a Redis restart) and returns typed wrappers.
 *
 * @example
 * import { createCacheClient, cacheScripts, entityCacheKeys } from '../shared/cache/index.ts';
 * const scripts = cacheScripts(createCacheClient({ url: 'redis://127.0.0.1:6379' }));
 * await scripts.invalidate([entityCacheKeys('widget', 'w-42', 1)], 7, 120_000);
 */
export function cacheScripts(client: CacheClient): CacheScripts {
  client.defineCommand('ballastCacheInvalidate', { lua: INVALIDATE_LUA });
  client.defineCommand('ballastCacheFill', { lua: FILL_LUA, numberOfKeys: 2 });
  client.defineCommand('ballastCacheEvictIfVersion', { lua: EVICT_IF_VERSION_LUA, numberOfKeys: 1 });
  const commands = client as unknown as ScriptCommands;
  return {
    async invalidate(keys, version, tombstoneTtlMs) {
      assertVersion(version);
      if (keys.length === 0) throw new RangeError('invalidate: at least one key pair is required');
      const flat = keys.flatMap((pair) => [pair.value, pair.tombstone]);
      const [tombstone, deleted] = await commands.ballastCacheInvalidate(flat.length, ...flat, String(version), Math.ceil(tombstoneTtlMs));
      return { tombstoneVersion: Number(tombstone), deleted: Number(deleted) };
    },
    async fill(keys, version, payload, ttlMs, deadlineEpochMs) {
      assertVersion(version);
      const [, outcome] = await commands.ballastCacheFill(
        keys.value, keys.tombstone, String(version), payload, Math.ceil(ttlMs), deadlineEpochMs === undefined ? '' : String(Math.floor(deadlineEpochMs)),
      );
      return String(outcome) as FillOutcome;
    },
    async evictIfVersion(valueKey, expectedVersion) {
      return (await commands.ballastCacheEvictIfVersion(valueKey, expectedVersion ?? '')) === 1;
    },
  };
}

function assertVersion(version: number): void {
  if (!Number.isSafeInteger(version) || version < 0) throw new RangeError(`item version must be a safe integer >= 0, got ${version}`);
}
