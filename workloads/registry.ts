/**
 * The one list of workloads this app runs. Add yours here (one import, one entry): the stack
 * bundles its functions from this module, `ballast dev` and the CLI load it, producers build with
 * its catalog.
 */
import { defineRegistry } from '@ballast-stack/ballast';
import { jobBuilder } from '@ballast-stack/ballast/producer';
import { accounts } from './accounts/index.ts';
import { inventory } from './inventory/index.ts';

export const registry = defineRegistry(import.meta.url, [accounts, inventory]);

export const WORKLOADS = registry.workloads;

/** Every registered job type, typed: what producers build with (`new JobProducer({ catalog: JOB_CATALOG, … })`). */
export const JOB_CATALOG = registry.catalog;

/**
 * Builds a job of any registered type, its payload typed by the type's schema.
 * @example
 * job('account.credit', { resourceId: 'acc-1', idempotencyKey: 'deposit-9', payload: { amount: 500 } });
 */
// Pure: functions that never build jobs (the worker) leave the builder out of their bundle.
export const job = /* @__PURE__ */ jobBuilder(JOB_CATALOG);
