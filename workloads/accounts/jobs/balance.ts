import { BALANCE_CHANGE, JOB_TYPES, type BalanceChange } from '../schemas.ts';
import type { TransactionalJob } from '@ballast-stack/ballast';
import { balanceWrite } from './balance-write.ts';

export interface BalanceJobOptions {
  readonly stateTableName: string;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * `account.credit` and `account.debit`: one conditional update of the account, committed in the
 * same transaction as the idempotency record. No read first: `ADD` is commutative and the debit's
 * `balance >= :amount` condition is checked by DynamoDB, so a first-time job is one round trip.
 */
function balanceJob(direction: 'credit' | 'debit', options: BalanceJobOptions): TransactionalJob<BalanceChange> {
  const nowMs = options.nowMs ?? Date.now;
  return {
    type: direction === 'credit' ? JOB_TYPES.credit : JOB_TYPES.debit,
    payload: BALANCE_CHANGE,
    effects: 'dynamodb',
    plan({ envelope, payload }) {
      return {
        result: { accountId: envelope.resourceId, [direction === 'credit' ? 'credited' : 'debited']: payload.amount },
        writes: [balanceWrite({
          stateTableName: options.stateTableName,
          accountId: envelope.resourceId,
          delta: direction === 'credit' ? payload.amount : -payload.amount,
          now: new Date(nowMs()).toISOString(),
          mustCover: direction === 'debit',
          expectedVersion: payload.expectedVersion,
        })],
      };
    },
  };
}

export const creditJob = (options: BalanceJobOptions) => balanceJob('credit', options);
export const debitJob = (options: BalanceJobOptions) => balanceJob('debit', options);
