import type { z } from 'zod';
import { createEnvelope, describeIssues, type Envelope } from '../envelope/index.ts';
import { BALANCE_CHANGE, JOB_TYPES, SYNC_PROFILE, type BalanceChange, type SyncProfile } from '../../workloads/accounts/schemas.ts';
import { InvalidJobError, type ProducerErrorOptions } from './errors.ts';

/** A shipped job type: its payload schema and whether producers must name the intent's key. */
export interface JobTypeSpec {
  readonly type: string;
  readonly payload: z.ZodType<Record<string, unknown>>;
  /**
   * Money moves must carry the business intent's key: without one a producer retry would move the
   * money twice. Fails closed: a job of such a type without `idempotencyKey` is refused.
   */
  readonly requiresIdempotencyKey: boolean;
}

/** The job types this SDK builds, keyed by their wire name. */
export const JOB_SPECS: Readonly<Record<string, JobTypeSpec>> = {
  [JOB_TYPES.credit]: { type: JOB_TYPES.credit, payload: BALANCE_CHANGE, requiresIdempotencyKey: true },
  [JOB_TYPES.debit]: { type: JOB_TYPES.debit, payload: BALANCE_CHANGE, requiresIdempotencyKey: true },
  [JOB_TYPES.syncProfile]: { type: JOB_TYPES.syncProfile, payload: SYNC_PROFILE, requiresIdempotencyKey: false },
};

/** What every job carries besides its payload. */
export interface JobCommon {
  /**
   * The business intent's key (an order id, a transfer id): the effect happens once per key.
   * Required for credits and debits.
   */
  readonly idempotencyKey?: string;
  /** @default - a random UUID */
  readonly jobId?: string;
  /** @default - a random UUID */
  readonly traceId?: string;
  /** Who built the job, e.g. `billing@1.4.2`. @default 'unknown' */
  readonly producerVersion?: string;
  /** @default - now */
  readonly producedAt?: Date;
}

/** A job as producers describe it (and as each line of a `ballast send` file reads). */
export interface JobRequest extends JobCommon {
  readonly type: string;
  readonly resourceId: string;
  readonly payload: Record<string, unknown>;
}

/**
 * Validates a job against its type's payload schema and builds its envelope.
 *
 * @throws InvalidJobError naming the unknown type or every invalid field; nothing is built
 * @example
 * import { buildJob } from 'ballast';
 * const envelope = buildJob({ type: 'account.credit', resourceId: 'acc-1', idempotencyKey: 'order-77', payload: { amount: 500 } });
 */
export function buildJob(request: JobRequest, errorOptions: ProducerErrorOptions = {}): Envelope {
  const spec = JOB_SPECS[request.type];
  if (!spec) {
    throw new InvalidJobError(`unknown job type '${String(request.type)}' (known: ${Object.keys(JOB_SPECS).join(', ')})`, {
      ...errorOptions, context: { type: request.type },
    });
  }
  if (typeof request.resourceId !== 'string' || request.resourceId === '') {
    throw new InvalidJobError(`${spec.type}: resourceId is required (the account id)`, errorOptions);
  }
  if (spec.requiresIdempotencyKey && (typeof request.idempotencyKey !== 'string' || request.idempotencyKey === '')) {
    throw new InvalidJobError(`${spec.type}: idempotencyKey is required (the business intent's id, e.g. an order id)`, errorOptions);
  }
  const payload = spec.payload.safeParse(request.payload ?? {});
  if (!payload.success) {
    throw new InvalidJobError(`${spec.type}: payload.${describeIssues(payload.error)}`, { ...errorOptions, context: { type: spec.type } });
  }
  try {
    return createEnvelope({ ...request, type: spec.type, payload: payload.data });
  } catch (error) {
    throw new InvalidJobError(`${spec.type}: ${(error as Error).message}`, { ...errorOptions, cause: error });
  }
}

/** Input of {@link creditJob} and {@link debitJob}. */
export interface BalanceChangeJob extends JobCommon, BalanceChange {
  readonly accountId: string;
  readonly idempotencyKey: string;
}

/**
 * `account.credit`: adds `amount` (integer minor units) to the account.
 * @example
 * const envelope = creditJob({ accountId: 'acc-1', amount: 500, idempotencyKey: 'deposit-9' });
 */
export function creditJob(input: BalanceChangeJob): Envelope {
  return balanceJob(JOB_TYPES.credit, input);
}

/**
 * `account.debit`: subtracts `amount`; refused (to the DLQ as `insufficient-funds`) below zero.
 * @example
 * const envelope = debitJob({ accountId: 'acc-1', amount: 200, idempotencyKey: 'order-77' });
 */
export function debitJob(input: BalanceChangeJob): Envelope {
  return balanceJob(JOB_TYPES.debit, input);
}

/** Input of {@link syncProfileJob}. */
export interface SyncProfileJob extends JobCommon, SyncProfile {
  readonly accountId: string;
}

/**
 * `account.sync-profile`: fetches the account's profile from the partner API and stores it.
 * @example
 * const envelope = syncProfileJob({ accountId: 'acc-1', reason: 'support ticket 42' });
 */
export function syncProfileJob(input: SyncProfileJob): Envelope {
  const { accountId, reason, ...common } = input;
  return buildJob({ ...common, type: JOB_TYPES.syncProfile, resourceId: accountId, payload: reason === undefined ? {} : { reason } });
}

function balanceJob(type: string, input: BalanceChangeJob): Envelope {
  const { accountId, amount, expectedVersion, ...common } = input;
  return buildJob({
    ...common, type, resourceId: accountId, payload: expectedVersion === undefined ? { amount } : { amount, expectedVersion },
  });
}
