import { InvalidCacheIdError } from './errors.ts';

/**
 * Ids that can name a cache entry: 1–128 characters, letters, digits, `-`, `_` or `.`, starting
 * with a letter or digit. The rule keeps `{`/`}` (the cluster hash-tag delimiters), `:` (the key
 * separator) and glob characters out of keys. Items whose id breaks it are never cached.
 */
export const CACHE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** {@link CACHE_ID_PATTERN} in words, for error messages and API responses. */
export const CACHE_ID_RULE =
  "an id is 1-128 characters of letters, digits, '-', '_' or '.', starting with a letter or digit (e.g. 'w-42')";

/** The keys of one cached item; all carry the `{<id>}` hash tag, so they share a cluster slot. */
export interface EntityCacheKeys {
  /** Hash with the entry: `<entity>:{<id>}:v<schema>`. */
  readonly value: string;
  /** Highest invalidated item version: `<entity>:{<id>}:v<schema>:tomb`. */
  readonly tombstone: string;
  /** Fill tickets of the reads in flight (token → deadline): `<entity>:{<id>}:v<schema>:tickets`. */
  readonly tickets: string;
}

/** True when `id` can name a cache entry (see {@link CACHE_ID_PATTERN}). */
export function isCacheableId(id: string): boolean {
  return CACHE_ID_PATTERN.test(id);
}

/**
 * The value, tombstone and ticket keys of an item's cache entry for one schema version. Fails closed: an
 * id that cannot form a safe key throws rather than producing a key that collides or spans slots.
 *
 * @param entity - the entity's name, e.g. `'widget'` (its items are `pk = widget#<id>`)
 * @param id - the id after the `#` of the item's `pk`
 * @throws InvalidCacheIdError when the id breaks {@link CACHE_ID_PATTERN}
 * @example
 * import { entityCacheKeys } from '../shared/cache/index.ts';
 * entityCacheKeys('widget', 'w-42', 1); // { value: 'widget:{w-42}:v1', tombstone: 'widget:{w-42}:v1:tomb', tickets: 'widget:{w-42}:v1:tickets' }
 */
export function entityCacheKeys(entity: string, id: string, schemaVersion: number): EntityCacheKeys {
  if (!isCacheableId(id)) {
    throw new InvalidCacheIdError(`${entity} '${id.slice(0, 140)}' cannot be cached: ${CACHE_ID_RULE}`, { context: { entity, id: id.slice(0, 140) } });
  }
  assertSchemaVersion(schemaVersion);
  const value = `${entity}:{${id}}:v${schemaVersion}`;
  return { value, tombstone: `${value}:tomb`, tickets: `${value}:tickets` };
}

/**
 * SCAN `MATCH` pattern of every value key of one entity and schema version (tombstones and
 * tickets excluded: the pattern must match the whole key, and theirs end in `:tomb`, `:tickets`).
 */
export function valueKeyPattern(entity: string, schemaVersion: number): string {
  assertSchemaVersion(schemaVersion);
  return `${entity}:{*}:v${schemaVersion}`;
}

/** The id inside a value key of `entity` and `schemaVersion`, or undefined if the key is not one. */
export function idOfValueKey(entity: string, key: string, schemaVersion: number): string | undefined {
  const prefix = `${entity}:{`;
  if (!key.startsWith(prefix)) return undefined;
  const match = /^([^{}]+)\}:v(\d+)$/.exec(key.slice(prefix.length));
  if (!match || Number(match[2]) !== schemaVersion || !isCacheableId(match[1] ?? '')) return undefined;
  return match[1];
}

function assertSchemaVersion(schemaVersion: number): void {
  if (!Number.isInteger(schemaVersion) || schemaVersion < 1) {
    throw new RangeError(`cache schema version must be an integer >= 1, got ${schemaVersion}`);
  }
}
