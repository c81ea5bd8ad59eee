import type { JobHandler } from '../../../shared/batch/index.ts';
import { creditJob, debitJob } from './balance.ts';
import { syncProfileJob, type SyncProfileJobOptions } from './sync-profile.ts';
import { transferJob } from './transfer.ts';

export { creditJob, debitJob, syncProfileJob, transferJob };

/** The example workload: every job type the worker runs. */
export function accountJobs(options: SyncProfileJobOptions): JobHandler[] {
  return [creditJob(options), debitJob(options), syncProfileJob(options), transferJob(options)];
}
