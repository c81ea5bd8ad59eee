import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Workload, WorkloadJobs } from './index.ts';
import type { Registry } from './registry.ts';

/**
 * Loads an app's registry from its module (what `ballast dev`, the CLI and the test harness are
 * given), refusing a module that does not export one as `registry`.
 * @param module - a path (relative to `cwd`) or a file URL
 */
export async function loadRegistry(module: string | URL, cwd = process.cwd()): Promise<Registry> {
  const path = modulePath(module, cwd);
  if (!existsSync(path)) throw new Error(`registry module ${path} does not exist`);
  const exported = (await import(pathToFileURL(path).href) as { registry?: Registry }).registry;
  if (!exported || !Array.isArray(exported.workloads)) {
    throw new Error(`${path} exports no registry: add \`export const registry = defineRegistry(import.meta.url, [...workloads])\``);
  }
  return exported;
}

/** Each workload's handlers, from the module its `jobs` names (what the worker's bundle imports statically). */
export async function loadWorkloadJobs(workloads: readonly Workload[]): Promise<WorkloadJobs[]> {
  return Promise.all(workloads.map(async (workload) => {
    const jobs = (await import(moduleHref(workload.jobs)) as { default?: WorkloadJobs }).default;
    if (!jobs || jobs.workload !== workload.name || typeof jobs.build !== 'function') {
      throw new Error(`workload ${workload.name}: ${modulePath(workload.jobs)} must \`export default defineJobs(${workload.name}, (runtime) => [...])\``);
    }
    return jobs;
  }));
}

/** The default export of a workload's `local` module, or `undefined` when it declares none. */
export async function loadWorkloadModule<T>(workload: Workload, module: URL | string | undefined): Promise<T | undefined> {
  if (module === undefined) return undefined;
  const exported = (await import(moduleHref(module)) as { default?: T }).default;
  if (exported === undefined) throw new Error(`workload ${workload.name}: ${modulePath(module)} has no default export`);
  return exported;
}

/** A workload module's absolute path: `URL`s and `file:` strings as they are, other strings from `cwd`. */
export function modulePath(module: URL | string, cwd = process.cwd()): string {
  if (module instanceof URL || module.startsWith('file:')) return fileURLToPath(module);
  return isAbsolute(module) ? module : resolve(cwd, module);
}

function moduleHref(module: URL | string): string {
  return pathToFileURL(modulePath(module)).href;
}
