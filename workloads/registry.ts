/**
 * The one list of workloads this deployment runs. Add yours here (one import, one entry); the
 * worker takes its job types from it.
 */
import type { Workload } from '../shared/workloads/index.ts';
import { accounts } from './accounts/index.ts';

export const WORKLOADS: readonly Workload[] = [accounts];
