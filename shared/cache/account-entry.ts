import { MalformedAccountError } from './errors.ts';

/**
 * What the cache stores and the read API returns for an account: the state table item without
 * its `pk`. This is the "cached format" that `CACHE_SCHEMA_VERSION` versions; change it, bump that.
 */
export interface CachedAccount {
  readonly accountId: string;
  readonly balance: number;
  /** The item's version (+1 per committed change): what fills and invalidations compare. */
  readonly version: number;
  readonly profile?: Record<string, unknown>;
  /** ISO-8601 instant of the last change, with milliseconds. */
  readonly updatedAt: string;
}

/**
 * Projects a state-table item (from GetItem or an unmarshalled stream image) onto
 * {@link CachedAccount}, checking the fields the cache relies on.
 *
 * @throws MalformedAccountError when `accountId`, `version`, `balance` or `updatedAt` is missing or mistyped
 */
export function toCachedAccount(item: object): CachedAccount {
  const { pk, accountId, balance, version, profile, updatedAt } = item as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof accountId !== 'string' || accountId === '') problems.push('accountId must be a non-empty string');
  if (!isVersion(version)) problems.push(`version must be an integer >= 0, got ${JSON.stringify(version)}`);
  if (typeof balance !== 'number' || !Number.isFinite(balance)) problems.push(`balance must be a number, got ${JSON.stringify(balance)}`);
  if (typeof updatedAt !== 'string' || Number.isNaN(Date.parse(updatedAt))) problems.push('updatedAt must be an ISO-8601 instant');
  if (profile !== undefined && (typeof profile !== 'object' || profile === null || Array.isArray(profile))) problems.push('profile must be a map');
  if (problems.length > 0) {
    throw new MalformedAccountError(`account item ${String(pk ?? accountId)} is malformed: ${problems.join('; ')}`, {
      context: { pk, problems },
    });
  }
  return {
    accountId: accountId as string,
    balance: balance as number,
    version: version as number,
    ...(profile === undefined ? {} : { profile: profile as Record<string, unknown> }),
    updatedAt: updatedAt as string,
  };
}

/** The `version` of an item image, if it is a usable one. */
export function itemVersion(item: Record<string, unknown> | undefined): number | undefined {
  const version = item?.version;
  return isVersion(version) ? version : undefined;
}

/** The JSON stored in the entry's `payload` field. */
export function encodeAccount(account: CachedAccount): string {
  return JSON.stringify(account);
}

/**
 * Reads an entry's payload back; undefined when it does not parse as a {@link CachedAccount} with
 * the entry's version (treated as a miss, never served).
 */
export function decodeAccount(payload: string, version: string | null): CachedAccount | undefined {
  try {
    const account = toCachedAccount(JSON.parse(payload) as Record<string, unknown>);
    return String(account.version) === version ? account : undefined;
  } catch {
    return undefined;
  }
}

function isVersion(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
