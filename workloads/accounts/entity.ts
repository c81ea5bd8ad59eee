import * as z from 'zod/mini';
import { defineEntity, projectItem } from '@ballast-stack/ballast';

/**
 * What the cache stores and `GET /accounts/{id}` returns for an account: the state-table item
 * without its `pk`. Change the fields and bump `schemaVersion` (see `CachedEntity.schemaVersion`).
 * The field order is the cached JSON's: keep it, so entries written by the previous release stay
 * byte-for-byte what this one writes.
 */
export const CACHED_ACCOUNT = z.object({
  accountId: z.string().check(z.minLength(1)),
  balance: z.number(),
  /** The item's version (+1 per committed change): what fills and invalidations compare. */
  version: z.int().check(z.nonnegative()),
  profile: z.optional(z.record(z.string(), z.unknown())),
  /** ISO-8601 instant of the last change, with milliseconds. */
  updatedAt: z.string().check(z.refine((text) => !Number.isNaN(Date.parse(text)), 'must be an ISO-8601 instant')),
});
export type CachedAccount = z.infer<typeof CACHED_ACCOUNT>;

/** Accounts (`pk = account#<id>`), cached and served at `GET /accounts/{id}`. */
export const accountEntity = defineEntity({ name: 'account', schemaVersion: 1, schema: CACHED_ACCOUNT, route: 'accounts' });

/** An account item (or stream image) as the cache stores it. @throws MalformedItemError */
export function toCachedAccount(item: object): CachedAccount {
  return projectItem(accountEntity, item);
}
