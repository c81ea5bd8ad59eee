import { defineJobTypes } from '@ballast-stack/ballast';
import { BALANCE_CHANGE, JOB_TYPES, SYNC_PROFILE, TRANSFER } from './schemas.ts';

/** The account example's job types, as producers and the worker see them. */
export const ACCOUNT_JOB_TYPES = defineJobTypes({
  [JOB_TYPES.credit]: { payload: BALANCE_CHANGE, requiresIdempotencyKey: true, resourceIdIs: 'the account id' },
  [JOB_TYPES.debit]: { payload: BALANCE_CHANGE, requiresIdempotencyKey: true, resourceIdIs: 'the account id' },
  [JOB_TYPES.syncProfile]: { payload: SYNC_PROFILE, resourceIdIs: 'the account id' },
  [JOB_TYPES.transfer]: {
    payload: TRANSFER, requiresIdempotencyKey: true, resourceIdIs: 'the debited account id', resources: ({ payload }) => [payload.to],
  },
});
