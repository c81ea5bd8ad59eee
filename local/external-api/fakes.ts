import type { Workload } from '../../shared/workloads/index.ts';
import { workloadLocal } from '../workload-local.ts';
import type { ExternalApi } from './server.ts';

/** A fake of one external API a workload's setting points at (e.g. its base URL), for local runs. */
export interface WorkloadFake {
  /** The workload setting the fake's URL is given as, e.g. `'PAYMENTS_API_URL'`. */
  readonly setting: string;
  /** One line for `npm start`'s engine list, e.g. `'payments API fake, honours Idempotency-Key'`. */
  readonly description: string;
  start(): Promise<ExternalApi>;
}

/** The fakes of every workload, started: their APIs by setting, and the settings to deploy with. */
export interface RunningFakes {
  readonly apis: ReadonlyMap<string, ExternalApi & { readonly description: string }>;
  /** `setting → URL`, as `-c` context for the local stack or a worker's settings. */
  readonly settings: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/** Starts every fake the workloads declare, each on a free port. */
export async function startWorkloadFakes(workloads: readonly Workload[]): Promise<RunningFakes> {
  const apis = new Map<string, ExternalApi & { readonly description: string }>();
  try {
    for (const workload of workloads) {
      for (const fake of (await workloadLocal(workload)).fakes ?? []) {
        if (apis.has(fake.setting)) throw new Error(`two fakes for the setting ${fake.setting}`);
        apis.set(fake.setting, Object.assign(await fake.start(), { description: fake.description }));
      }
    }
  } catch (error) {
    await Promise.all([...apis.values()].map((api) => api.stop()));
    throw error;
  }
  return {
    apis,
    settings: Object.fromEntries([...apis].map(([setting, api]) => [setting, api.url])),
    stop: async () => void (await Promise.all([...apis.values()].map((api) => api.stop()))),
  };
}
