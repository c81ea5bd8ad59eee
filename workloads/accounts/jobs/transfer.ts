import { FatalError, REASONS } from '@ballast-stack/ballast';
import type { TransactionalJob } from '@ballast-stack/ballast';
import { JOB_TYPES, TRANSFER, type Transfer } from '../schemas.ts';
import { balanceWrite } from './balance-write.ts';
import type { BalanceJobOptions } from './balance.ts';

/**
 * `account.transfer`: debits the job's account and credits `payload.to` in one transaction with
 * the idempotency record, each a versioned change (so the invalidator drops both cached values).
 * When the source cannot pay, the whole transaction is refused (`insufficient-funds`) and nothing
 * is applied. Its job type declares both accounts, so a batch never runs it beside another job on
 * either.
 */
export function transferJob(options: BalanceJobOptions): TransactionalJob<Transfer> {
  const nowMs = options.nowMs ?? Date.now;
  return {
    type: JOB_TYPES.transfer,
    payload: TRANSFER,
    effects: 'dynamodb',
    plan({ envelope, payload }) {
      const from = envelope.resourceId;
      if (payload.to === from) throw new FatalError(REASONS.invalidPayload, `account.transfer: 'to' must be another account than ${from}`);
      const now = new Date(nowMs()).toISOString();
      const change = { stateTableName: options.stateTableName, now };
      return {
        result: { accountId: from, to: payload.to, transferred: payload.amount },
        writes: [
          balanceWrite({ ...change, accountId: from, delta: -payload.amount, mustCover: true }),
          balanceWrite({ ...change, accountId: payload.to, delta: payload.amount }),
        ],
      };
    },
  };
}
