import { accountKey, BALANCE_CHANGE, JOB_TYPES, type BalanceChange } from '../schemas.ts';
import { FatalError, REASONS } from '../../../shared/errors/index.ts';
import { ACCOUNT_REASONS } from '../reasons.ts';
import type { TransactionalJob } from '../../../shared/batch/index.ts';
import { STATE_TABLE } from '../../../shared/tables/index.ts';

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
      const conditions: string[] = [];
      const values: Record<string, unknown> = {
        ':id': envelope.resourceId,
        ':delta': direction === 'credit' ? payload.amount : -payload.amount,
        ':one': 1,
        ':now': new Date(nowMs()).toISOString(),
      };
      if (direction === 'debit') {
        conditions.push('balance >= :amount');
        values[':amount'] = payload.amount;
      }
      if (payload.expectedVersion !== undefined) {
        conditions.push(payload.expectedVersion === 0 ? 'attribute_not_exists(version)' : 'version = :expected');
        if (payload.expectedVersion !== 0) values[':expected'] = payload.expectedVersion;
      }
      const result = { accountId: envelope.resourceId, [direction === 'credit' ? 'credited' : 'debited']: payload.amount };
      return {
        result,
        writes: [{
          item: {
            Update: {
              TableName: options.stateTableName,
              Key: { [STATE_TABLE.partitionKey]: accountKey(envelope.resourceId) },
              UpdateExpression: 'SET accountId = :id, updatedAt = :now ADD balance :delta, version :one',
              ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
              ExpressionAttributeValues: values,
            },
          },
          onConditionFailed: (current) => {
            const version = current?.version as number | undefined;
            if (payload.expectedVersion !== undefined && (version ?? 0) !== payload.expectedVersion) {
              return new FatalError(REASONS.staleVersion,
                `account ${envelope.resourceId} is at version ${version ?? 0}, the job expected ${payload.expectedVersion}`,
                { context: { currentVersion: version ?? 0, expectedVersion: payload.expectedVersion } });
            }
            if (!current) return new FatalError(ACCOUNT_REASONS.accountNotFound, `account ${envelope.resourceId} does not exist`);
            return new FatalError(ACCOUNT_REASONS.insufficientFunds,
              `account ${envelope.resourceId} has ${String(current.balance)}, cannot debit ${payload.amount}`,
              { context: { balance: current.balance, amount: payload.amount } });
          },
        }],
      };
    },
  };
}

export const creditJob = (options: BalanceJobOptions) => balanceJob('credit', options);
export const debitJob = (options: BalanceJobOptions) => balanceJob('debit', options);
