import type { Registry } from '../shared/workloads/index.ts';
import { loadRegistry } from '../shared/workloads/load.ts';

/** The CDK context key a local tool's own app (the chaos stack) reads its registry module from. */
export const REGISTRY_CONTEXT = 'ballast:registry';

/** The variable naming an app's registry module for the local tools and the CLI when no `--registry` is given. */
export const REGISTRY_VARIABLE = 'BALLAST_REGISTRY';

/**
 * The registry a local tool runs (the chaos run, the rehearsal, the benchmarks): `--registry
 * <module>` when given, else `BALLAST_REGISTRY`, refused with what to pass when neither is.
 */
export async function toolRegistry(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<Registry> {
  const module = flag ?? env[REGISTRY_VARIABLE];
  if (!module) throw new Error(`which workloads? pass --registry <module exporting \`registry\`> or set ${REGISTRY_VARIABLE}`);
  return loadRegistry(module);
}
