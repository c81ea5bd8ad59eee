import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Workload } from '../shared/workloads/index.ts';
import type { DemoRequest, DemoTraffic } from './demo/workload.ts';
import type { WorkloadFake } from './external-api/fakes.ts';
import type { WorkloadChaos } from './chaos/workload-chaos.ts';

/**
 * What a workload adds to local runs (`npm start`, the tests, the chaos run), exported as `local`
 * from `workloads/<name>/local/index.ts`. Optional; nothing in it reaches a Lambda bundle.
 */
export interface WorkloadLocal {
  /** Fakes of the external APIs its settings point at. @default [] */
  readonly fakes?: readonly WorkloadFake[];
  /** Its share of `npm start`'s demo traffic. @default - none */
  readonly demo?: (request: DemoRequest) => DemoTraffic;
  /** Its traffic and invariants in the chaos run. @default - not in the chaos run */
  readonly chaos?: WorkloadChaos;
}

const workloadsRoot = new URL('../workloads/', import.meta.url);

/**
 * The local part of a workload, found by convention (`workloads/<name>/local/index.ts`), so the
 * one registry stays the only list of workloads.
 */
export async function workloadLocal(workload: Workload): Promise<WorkloadLocal> {
  const file = new URL(`${workload.name}/local/index.ts`, workloadsRoot);
  if (!existsSync(fileURLToPath(file))) return {};
  return ((await import(file.href)) as { local?: WorkloadLocal }).local ?? {};
}
