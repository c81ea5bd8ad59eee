import { fileURLToPath } from 'node:url';
import { workloadCatalog, workloadEntities, workloadReasons, type CatalogOf, type Workload } from './index.ts';

/**
 * The one list of workloads an app runs, exported as `registry` from its own module: the stack
 * bundles each function from that module, `ballast dev` and the CLI load it, producers build
 * jobs with its {@link catalog}.
 */
export interface Registry<W extends readonly Workload[] = readonly Workload[]> {
  /** Absolute path of the module that exports this registry as `registry`. */
  readonly module: string;
  readonly workloads: W;
  /** Every workload's job types in one catalog, typed (what `JobProducer` and `jobBuilder` take). */
  readonly catalog: CatalogOf<W>;
}

/**
 * Declares the app's workloads, refusing two with one name, and a job type, cached entity, read
 * route or reason that two of them claim.
 * @param module - the declaring module's `import.meta.url`; it must export the result as `registry`
 * @example
 * export const registry = defineRegistry(import.meta.url, [orders]);
 */
export function defineRegistry<const W extends readonly Workload[]>(module: string | URL, workloads: W): Registry<W> {
  const href = String(module);
  if (!href.startsWith('file:')) throw new Error(`defineRegistry: pass the registry module's import.meta.url (a file: URL), got '${href}'`);
  const names = new Set<string>();
  for (const { name } of workloads) {
    if (names.has(name)) throw new Error(`workload ${name} is registered twice`);
    names.add(name);
  }
  workloadEntities(workloads);
  workloadReasons(workloads);
  return { module: fileURLToPath(href), workloads, catalog: workloadCatalog(workloads) };
}
