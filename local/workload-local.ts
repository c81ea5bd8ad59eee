import type { Workload } from '../shared/workloads/index.ts';
import { loadWorkloadModule } from '../shared/workloads/load.ts';
import type { DemoRequest, DemoTraffic } from './demo/workload.ts';
import type { WorkloadFake } from './external-api/fakes.ts';
import type { WorkloadChaos } from './chaos/workload-chaos.ts';

/**
 * What a workload adds to local runs (`ballast dev`, the test harness, the chaos run): the default
 * export of the module its `local` names. Optional; nothing in it reaches a Lambda bundle.
 */
export interface WorkloadLocal {
  /** Fakes of the external APIs its settings point at. @default [] */
  readonly fakes?: readonly WorkloadFake[];
  /** Its share of `npm start`'s demo traffic. @default - none */
  readonly demo?: (request: DemoRequest) => DemoTraffic;
  /** Its traffic and invariants in the chaos run. @default - not in the chaos run */
  readonly chaos?: WorkloadChaos;
}

/** The local part of a workload: the default export of the module its `local` names (none: nothing local). */
export async function workloadLocal(workload: Workload): Promise<WorkloadLocal> {
  return (await loadWorkloadModule<WorkloadLocal>(workload, workload.local)) ?? {};
}
