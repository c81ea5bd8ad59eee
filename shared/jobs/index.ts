export { accountKey, BALANCE_CHANGE, JOB_TYPES, SYNC_PROFILE, type Account, type BalanceChange, type SyncProfile } from './account.ts';
