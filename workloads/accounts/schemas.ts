import * as z from 'zod/mini';
import { entityKey } from '@ballast-stack/ballast';

/**
 * Payload schemas of the example workload ballast ships: the producer SDK builds with them and
 * the worker validates with them, so the two sides cannot drift.
 */
export const JOB_TYPES = {
  credit: 'account.credit',
  debit: 'account.debit',
  syncProfile: 'account.sync-profile',
  transfer: 'account.transfer',
} as const;

const amount = z.int().check(z.positive(), z.maximum(1_000_000_000));

/** Money moves in integer minor units (cents); `expectedVersion` makes the update conditional. */
export const BALANCE_CHANGE = z.object({
  amount,
  /** When set, the change applies only if the account is still at this version (optimistic concurrency). */
  expectedVersion: z.optional(z.int().check(z.nonnegative())),
});
export type BalanceChange = z.infer<typeof BALANCE_CHANGE>;

/** Moves `amount` from the job's account (its `resourceId`) to `to`, atomically. */
export const TRANSFER = z.object({
  /** The credited account (created by its first credit, like `account.credit` does). */
  to: z.string().check(z.minLength(1), z.maxLength(128)),
  amount,
});
export type Transfer = z.infer<typeof TRANSFER>;

export const SYNC_PROFILE = z.object({
  /** Why the sync was requested; passed through to the partner for its audit log. */
  reason: z.optional(z.string().check(z.maxLength(200))),
});
export type SyncProfile = z.infer<typeof SYNC_PROFILE>;

/** An account as stored on the state table (`pk = account#<id>`). */
export interface Account {
  readonly pk: string;
  readonly accountId: string;
  readonly balance: number;
  readonly version: number;
  readonly profile?: Record<string, unknown>;
  readonly updatedAt: string;
}

/** The state table's `pk` of an account. */
export function accountKey(accountId: string): string {
  return entityKey('account', accountId);
}
