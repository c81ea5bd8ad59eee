import type { BusinessWrite } from '@ballast-stack/ballast';
import { FatalError, REASONS } from '@ballast-stack/ballast';
import { STATE_TABLE } from '@ballast-stack/ballast';
import { ACCOUNT_REASONS } from '../reasons.ts';
import { accountKey } from '../schemas.ts';

/** One versioned change of one account's balance. */
export interface BalanceChangeWrite {
  readonly stateTableName: string;
  readonly accountId: string;
  /** Added to the balance (negative for a debit). */
  readonly delta: number;
  /** ISO-8601 instant of the change. */
  readonly now: string;
  /** Refuse (`insufficient-funds`, or `account-not-found` if there is no account) unless the balance covers `-delta`. @default false */
  readonly mustCover?: boolean;
  /** Apply only at this version (0: the account must not exist yet), else `stale-version`. @default - any version */
  readonly expectedVersion?: number;
}

/**
 * The transaction item of a balance change: `ADD balance, version` (+1 per change, what the cache
 * compares) in one conditional update, no read first. `ADD` on a missing item creates the account,
 * which is what a first credit does; a debit's `balance >= :amount` is checked by DynamoDB.
 */
export function balanceWrite(change: BalanceChangeWrite): BusinessWrite {
  const amount = Math.abs(change.delta);
  const conditions: string[] = [];
  const values: Record<string, unknown> = { ':id': change.accountId, ':delta': change.delta, ':one': 1, ':now': change.now };
  if (change.mustCover) {
    conditions.push('balance >= :amount');
    values[':amount'] = amount;
  }
  if (change.expectedVersion !== undefined) {
    conditions.push(change.expectedVersion === 0 ? 'attribute_not_exists(version)' : 'version = :expected');
    if (change.expectedVersion !== 0) values[':expected'] = change.expectedVersion;
  }
  return {
    item: {
      Update: {
        TableName: change.stateTableName,
        Key: { [STATE_TABLE.partitionKey]: accountKey(change.accountId) },
        UpdateExpression: 'SET accountId = :id, updatedAt = :now ADD balance :delta, version :one',
        ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
        ExpressionAttributeValues: values,
      },
    },
    onConditionFailed: (current) => {
      const version = current?.version as number | undefined;
      if (change.expectedVersion !== undefined && (version ?? 0) !== change.expectedVersion) {
        return new FatalError(REASONS.staleVersion,
          `account ${change.accountId} is at version ${version ?? 0}, the job expected ${change.expectedVersion}`,
          { context: { currentVersion: version ?? 0, expectedVersion: change.expectedVersion } });
      }
      if (!current) return new FatalError(ACCOUNT_REASONS.accountNotFound, `account ${change.accountId} does not exist`);
      return new FatalError(ACCOUNT_REASONS.insufficientFunds,
        `account ${change.accountId} has ${String(current.balance)}, cannot debit ${amount}`,
        { context: { balance: current.balance, amount } });
    },
  };
}
