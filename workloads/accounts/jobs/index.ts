import type { JobHandler } from '../../../shared/batch/index.ts';
import { creditJob, debitJob } from './balance.ts';
import { syncProfileJob, type SyncProfileJobOptions } from './sync-profile.ts';

export { creditJob, debitJob, syncProfileJob };

/** The example workload: every job type the worker runs. */
export function accountJobs(options: SyncProfileJobOptions): JobHandler[] {
  return [creditJob(options), debitJob(options), syncProfileJob(options)];
}
