import { InvalidAccountIdError } from './errors.ts';

/**
 * Version of the cached account format (the JSON payload and the hash layout, see
 * `account-entry.ts`). Bump it whenever that format changes: new readers then use new keys and
 * can never read an entry written in the old format; old entries simply expire with their TTL.
 *
 * Bump procedure: add the old number to {@link OLDER_CACHE_SCHEMA_VERSIONS} in the same change, so
 * the new invalidator keeps invalidating the keys old readers still use during the rollout, and
 * deploy the invalidator no later than the readers. Remove it once no old reader is left.
 */
export const CACHE_SCHEMA_VERSION = 1;

/** Schema versions still read by a previous deployment; the invalidator invalidates them too. */
export const OLDER_CACHE_SCHEMA_VERSIONS: readonly number[] = [];

/**
 * Account ids that can name a cache entry: 1–128 characters, letters, digits, `-`, `_` or `.`,
 * starting with a letter or digit. The rule keeps `{`/`}` (the cluster hash-tag delimiters), `:`
 * (the key separator) and glob characters out of keys. Ids outside it are never cached.
 */
export const ACCOUNT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** {@link ACCOUNT_ID_PATTERN} in words, for error messages and API responses. */
export const ACCOUNT_ID_RULE =
  "an account id is 1-128 characters of letters, digits, '-', '_' or '.', starting with a letter or digit (e.g. 'acc-42')";

/** The two keys of one cached account; both carry the `{<id>}` hash tag, so they share a cluster slot. */
export interface AccountCacheKeys {
  /** Hash with the entry: `account:{<id>}:v<schema>`. */
  readonly value: string;
  /** Highest invalidated item version: `account:{<id>}:v<schema>:tomb`. */
  readonly tombstone: string;
}

/** True when `accountId` can name a cache entry (see {@link ACCOUNT_ID_PATTERN}). */
export function isCacheableAccountId(accountId: string): boolean {
  return ACCOUNT_ID_PATTERN.test(accountId);
}

/**
 * The value and tombstone keys of an account's cache entry for one schema version. Fails closed:
 * an id that cannot form a safe key throws rather than producing a key that collides or spans slots.
 *
 * @param accountId - the account id (the state table's `accountId`, not its `pk`)
 * @param schemaVersion - @default CACHE_SCHEMA_VERSION
 * @throws InvalidAccountIdError when the id breaks {@link ACCOUNT_ID_PATTERN}
 * @example
 * import { accountCacheKeys } from '../shared/cache/index.ts';
 * accountCacheKeys('acc-42'); // { value: 'account:{acc-42}:v1', tombstone: 'account:{acc-42}:v1:tomb' }
 */
export function accountCacheKeys(accountId: string, schemaVersion: number = CACHE_SCHEMA_VERSION): AccountCacheKeys {
  if (!isCacheableAccountId(accountId)) {
    throw new InvalidAccountIdError(`'${accountId.slice(0, 140)}' cannot be cached: ${ACCOUNT_ID_RULE}`, {
      context: { accountId: accountId.slice(0, 140) },
    });
  }
  assertSchemaVersion(schemaVersion);
  const value = `account:{${accountId}}:v${schemaVersion}`;
  return { value, tombstone: `${value}:tomb` };
}

/**
 * SCAN `MATCH` pattern of every account value key of one schema version (tombstones excluded:
 * the pattern must match the whole key, and tombstones end in `:tomb`).
 */
export function accountValueKeyPattern(schemaVersion: number = CACHE_SCHEMA_VERSION): string {
  assertSchemaVersion(schemaVersion);
  return `account:{*}:v${schemaVersion}`;
}

/** The account id inside a value key of `schemaVersion`, or undefined if the key is not one. */
export function accountIdOfKey(key: string, schemaVersion: number = CACHE_SCHEMA_VERSION): string | undefined {
  const match = /^account:\{([^{}]+)\}:v(\d+)$/.exec(key);
  if (!match || Number(match[2]) !== schemaVersion || !isCacheableAccountId(match[1] ?? '')) return undefined;
  return match[1];
}

function assertSchemaVersion(schemaVersion: number): void {
  if (!Number.isInteger(schemaVersion) || schemaVersion < 1) {
    throw new RangeError(`cache schema version must be an integer >= 1, got ${schemaVersion}`);
  }
}
