/**
 * The one list of workloads this deployment runs. Add yours here (one import, one entry): the
 * worker, the invalidator, the read API, the stack, the producer SDK, the CLI, the demo and the
 * chaos run all take them from here.
 */
import { jobBuilder } from '../shared/producer/jobs.ts';
import { workloadCatalog, type Workload } from '../shared/workloads/index.ts';
import { accounts } from './accounts/index.ts';
import { inventory } from './inventory/index.ts';

export const WORKLOADS = [accounts, inventory] as const satisfies readonly Workload[];

/** Every registered job type, typed: what producers build with (`new JobProducer({ catalog: JOB_CATALOG, … })`). */
export const JOB_CATALOG = workloadCatalog(WORKLOADS);

/**
 * Builds a job of any registered type, its payload typed by the type's schema.
 * @example
 * const envelope = job('account.credit', { resourceId: 'acc-1', idempotencyKey: 'deposit-9', payload: { amount: 500 } });
 */
// Pure: functions that never build jobs (the worker) leave the builder out of their bundle.
export const job = /* @__PURE__ */ jobBuilder(JOB_CATALOG);
