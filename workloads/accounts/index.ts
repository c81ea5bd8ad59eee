/**
 * The example workload ballast ships: accounts with a balance (`account.credit`, `account.debit`
 * and `account.transfer` between two accounts, all DynamoDB-only) and a profile synced from a
 * partner API (`account.sync-profile`, external, under the account's lock). It is what a team's
 * own workload looks like.
 */
import { defineWorkload } from '@ballast-stack/ballast';
import { accountEntity } from './entity.ts';
import { ACCOUNT_JOB_TYPES } from './job-types.ts';
import { ACCOUNT_REASONS } from './reasons.ts';

export {
  accountKey, BALANCE_CHANGE, JOB_TYPES, SYNC_PROFILE, TRANSFER, type Account, type BalanceChange, type SyncProfile, type Transfer,
} from './schemas.ts';
export { ACCOUNT_JOB_TYPES } from './job-types.ts';
export { accountEntity, CACHED_ACCOUNT, toCachedAccount, type CachedAccount } from './entity.ts';
export { ACCOUNT_REASONS } from './reasons.ts';

/** Base URL of the partner profile API that `account.sync-profile` calls. */
export const PARTNER_API_URL = 'PARTNER_API_URL';

export const accounts = defineWorkload({
  name: 'accounts',
  settings: [PARTNER_API_URL],
  reasons: [
    { code: ACCOUNT_REASONS.insufficientFunds },
    { code: ACCOUNT_REASONS.accountNotFound },
    { code: ACCOUNT_REASONS.partnerRejected, dependencyRejection: true },
  ],
  entities: [accountEntity],
  jobTypes: ACCOUNT_JOB_TYPES,
  // Modules, not imports: only the worker's bundle carries the job code, no bundle the local parts.
  jobs: new URL('./jobs/index.ts', import.meta.url),
  local: new URL('./local/index.ts', import.meta.url),
  // Not `accountId` or `Account` alone: those are AWS's words too (account ids in ARNs).
  vocabulary: [
    /account[#.]/, /\baccountKey\b/, /\b(Cached)?Account(Cache|Entry|Change)\b/, /\bCachedAccount\b/, /\/accounts\b/,
    /\bbalance\b/i, /\b(credit|debit)(Job|ed)?\b/i, /\btransferJob\b/, /sync-?profile/i, /\bpartner/i,
  ],
});
