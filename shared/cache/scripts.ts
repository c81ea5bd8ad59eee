import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { EntityCacheKeys } from './keys.ts';

/** A standalone or cluster connection: everything in `shared/cache` works with both. */
export type CacheClient = Redis | Cluster;

/** At most this many fill tickets of one item are out at once; past it a read fills nothing (those out will). */
export const MAX_TICKETS_PER_ITEM = 64;

/**
 * Redis's own clock in epoch ms, and the tickets' floor: the highest version invalidated while
 * fill tickets were out, a member `floor:<version>:<expiresAtMs>` of the tickets' sorted set with
 * score +inf (so the sweep of expired tickets, by deadline, never takes it), until it expires.
 */
const SHARED_LUA = `
local function nowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function floorMember(ticketsKey)
  return redis.call('ZRANGEBYSCORE', ticketsKey, '+inf', '+inf', 'LIMIT', 0, 1)[1]
end
local function floorOf(ticketsKey, now)
  local member = floorMember(ticketsKey)
  if not member then return nil end
  local version, expiresAt = string.match(member, '^floor:(%d+):(%d+)$')
  if not version or tonumber(expiresAt) < now then return nil end
  return tonumber(version)
end
local function takeTicket(ticketsKey, token, validFor, maxTickets)
  local now = nowMs()
  redis.call('ZREMRANGEBYSCORE', ticketsKey, '-inf', '(' .. string.format('%d', now))
  if redis.call('ZCARD', ticketsKey) >= maxTickets then return 0 end
  redis.call('ZADD', ticketsKey, string.format('%d', now + validFor), token)
  if redis.call('PTTL', ticketsKey) < validFor then redis.call('PEXPIRE', ticketsKey, validFor) end
  return 1
end
`;

/**
 * invalidate(KEYS = value₁, tomb₁, tickets₁[, value₂, tomb₂, tickets₂ …]; ARGV = version, tombstoneTtlMs)
 *
 * For each (value, tombstone, tickets) triple — several schema versions of one item, all in one slot:
 * the tombstone becomes max(existing, version) and lives at least `tombstoneTtlMs` more; the value
 * is deleted when its version is below the tombstone (or it has no readable version); while fill
 * tickets are out, their floor becomes max(existing, version) for `tombstoneTtlMs`, so the fills of
 * reads in flight meet this invalidation even if the tombstone is evicted. Applying it twice, or an
 * older one after a newer one, leaves the same state: idempotent, order-independent.
 * The tombstone keeps the caller's decimal string (Lua would print big numbers as 1e+15).
 * Returns { tombstone version of the first pair, values deleted }.
 */
const INVALIDATE_LUA = `${SHARED_LUA}
local version = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local now = nowMs()
local firstTomb, deleted = nil, 0
for i = 1, #KEYS, 3 do
  local valueKey, tombKey, ticketsKey = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  if redis.call('EXISTS', ticketsKey) == 1 then
    local floorText = ARGV[1]
    local floor = floorOf(ticketsKey, now)
    if floor and floor > version then floorText = string.format('%d', floor) end
    local old = floorMember(ticketsKey)
    if old then redis.call('ZREM', ticketsKey, old) end
    redis.call('ZADD', ticketsKey, '+inf', 'floor:' .. floorText .. ':' .. string.format('%d', now + ttl))
  end
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
 * ticket(KEYS = tickets; ARGV = token, validForMs, maxTickets)
 *
 * Taken by a read that missed, before it reads the table: the token joins the item's tickets, a
 * sorted set scored by deadline (now + `validForMs` by Redis's clock) beside the floor the
 * invalidations raise. Expired tickets are swept on the way (by score: abandoned ones, a read that
 * found nothing to fill, cost nothing for long); the key lives as long as its longest-lived
 * ticket. Past `maxTickets` out at once, no ticket is given (returns 0). A fill stores only if
 * its ticket is still there: Redis losing the key (restarted or failed over empty, FLUSHALL,
 * evicted) loses the tickets and the floor with it, whatever else was lost, tombstones included.
 */
const TICKET_LUA = `${SHARED_LUA}
return takeTicket(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
`;

/**
 * lookup(KEYS = value, tickets; ARGV = token, validForMs, maxTickets)
 *
 * A read's one round trip: the entry's version and payload when it has a payload (a hit, the
 * tickets untouched), else the ticket of `TICKET_LUA` taken at once for the miss's fill. Returns
 * {1, version or nil, payload} or {0, 1 if the ticket was given else 0}.
 */
const LOOKUP_LUA = `${SHARED_LUA}
local entry = redis.call('HMGET', KEYS[1], 'version', 'payload')
if entry[2] then return {1, entry[1], entry[2]} end
return {0, takeTicket(KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))}
`;

/**
 * fill(KEYS = value, tomb, tickets; ARGV = version, payload, ttlMs, token)
 *
 * Spends the ticket `token`, then stores { version, payload } with a TTL only when the version is
 * at least the tombstone's and the tickets' floor (no invalidation of a newer version has been
 * seen, even one whose tombstone is gone), the ticket was still there (nothing lost since the read
 * began) and within its deadline, and the version is strictly newer than the stored value's (an
 * equal one is already there). Returns {1, 'stored'} or {0, reason}.
 */
const FILL_LUA = `${SHARED_LUA}
local deadline = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[4]))
if deadline then redis.call('ZREM', KEYS[3], ARGV[4]) end
local version = tonumber(ARGV[1])
local tomb = tonumber(redis.call('GET', KEYS[2]))
if tomb and version < tomb then return {0, 'stale-tombstone'} end
if not deadline then return {0, 'ticket-gone'} end
local now = nowMs()
local floor = floorOf(KEYS[3], now)
if floor and version < floor then return {0, 'stale-tombstone'} end
if now > deadline then return {0, 'too-slow'} end
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
  /**
   * An invalidation of a newer version was applied (the value was read before a commit): the
   * tombstone says so, or the tickets' floor does where the tombstone was evicted.
   */
  staleTombstone: 'stale-tombstone',
  /**
   * The read's ticket was gone: Redis lost it (restarted or failed over empty, FLUSHALL, eviction)
   * and with it, perhaps, the tombstone that would have refused this value; or it had expired and
   * another read's ticket swept it.
   */
  ticketGone: 'ticket-gone',
  /**
   * The fill reached Redis after its ticket's deadline (by Redis's own clock): a command delayed
   * in the network long after the client gave up on it must not store.
   */
  tooSlow: 'too-slow',
} as const;
export type FillOutcome = (typeof FILL_OUTCOMES)[keyof typeof FILL_OUTCOMES];

/** What {@link CacheScripts.lookup} found: the entry as stored, or, on a miss, the fill ticket it took. */
export type CacheLookup =
  | { readonly hit: true; readonly version: string | null; readonly payload: string }
  /** `ticket` is undefined past {@link MAX_TICKETS_PER_ITEM} out: the read then fills nothing. */
  | { readonly hit: false; readonly ticket: string | undefined };

/** Typed wrappers over the cache's Lua scripts (EVALSHA, with ioredis falling back to EVAL on NOSCRIPT). */
export interface CacheScripts {
  /** See `INVALIDATE_LUA`: every entry of `keys` must belong to one item (one slot). */
  invalidate(keys: readonly EntityCacheKeys[], version: number, tombstoneTtlMs: number): Promise<{ tombstoneVersion: number; deleted: number }>;
  /** See `LOOKUP_LUA`: the entry, or a miss's fill ticket (valid `validForMs`), in one round trip. */
  lookup(keys: EntityCacheKeys, validForMs: number): Promise<CacheLookup>;
  /** See `TICKET_LUA`: resolves with the ticket's token, for the fill; undefined past {@link MAX_TICKETS_PER_ITEM} out. */
  ticket(keys: EntityCacheKeys, validForMs: number): Promise<string | undefined>;
  /** See `FILL_LUA`: `ticket` is what {@link CacheScripts.ticket} gave before the value was read. */
  fill(keys: EntityCacheKeys, ticket: string, version: number, payload: string, ttlMs: number): Promise<FillOutcome>;
  /** See `EVICT_IF_VERSION_LUA`. */
  evictIfVersion(valueKey: string, expectedVersion: string | undefined): Promise<boolean>;
}

type ScriptReply = [number | string, number | string];
interface ScriptCommands {
  ballastCacheInvalidate(numberOfKeys: number, ...args: (string | number)[]): Promise<ScriptReply>;
  ballastCacheTicket(...args: (string | number)[]): Promise<number>;
  ballastCacheLookup(...args: (string | number)[]): Promise<[number, string | number | null, string?]>;
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
  client.defineCommand('ballastCacheTicket', { lua: TICKET_LUA, numberOfKeys: 1 });
  client.defineCommand('ballastCacheLookup', { lua: LOOKUP_LUA, numberOfKeys: 2 });
  client.defineCommand('ballastCacheFill', { lua: FILL_LUA, numberOfKeys: 3 });
  client.defineCommand('ballastCacheEvictIfVersion', { lua: EVICT_IF_VERSION_LUA, numberOfKeys: 1 });
  const commands = client as unknown as ScriptCommands;
  return {
    async invalidate(keys, version, tombstoneTtlMs) {
      assertVersion(version);
      if (keys.length === 0) throw new RangeError('invalidate: the keys of at least one schema version are required');
      const flat = keys.flatMap((item) => [item.value, item.tombstone, item.tickets]);
      const [tombstone, deleted] = await commands.ballastCacheInvalidate(flat.length, ...flat, String(version), Math.ceil(tombstoneTtlMs));
      return { tombstoneVersion: Number(tombstone), deleted: Number(deleted) };
    },
    async lookup(keys, validForMs) {
      const token = randomUUID();
      const [hit, second, payload] = await commands.ballastCacheLookup(keys.value, keys.tickets, token, Math.ceil(validForMs), MAX_TICKETS_PER_ITEM);
      if (hit === 1) return { hit: true, version: second === null ? null : String(second), payload: String(payload) };
      return { hit: false, ticket: second === 1 ? token : undefined };
    },
    async ticket(keys, validForMs) {
      const token = randomUUID();
      return (await commands.ballastCacheTicket(keys.tickets, token, Math.ceil(validForMs), MAX_TICKETS_PER_ITEM)) === 1 ? token : undefined;
    },
    async fill(keys, ticket, version, payload, ttlMs) {
      assertVersion(version);
      const [, outcome] = await commands.ballastCacheFill(keys.value, keys.tombstone, keys.tickets, String(version), payload, Math.ceil(ttlMs), ticket);
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
