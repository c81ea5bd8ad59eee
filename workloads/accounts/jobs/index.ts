import { defineJobs, type JobHandler } from '@ballast-stack/ballast';
import { accounts, PARTNER_API_URL } from '../index.ts';
import { creditJob, debitJob } from './balance.ts';
import { syncProfileJob, type SyncProfileJobOptions } from './sync-profile.ts';
import { transferJob } from './transfer.ts';

export { creditJob, debitJob, syncProfileJob, transferJob };

/** The example workload: every job type the worker runs. */
export function accountJobs(options: SyncProfileJobOptions): JobHandler[] {
  return [creditJob(options), debitJob(options), syncProfileJob(options), transferJob(options)];
}

export default defineJobs(accounts, (runtime) => accountJobs({
  stateTableName: runtime.stateTableName, nowMs: runtime.nowMs, partnerApiUrl: runtime.setting(PARTNER_API_URL),
}));
