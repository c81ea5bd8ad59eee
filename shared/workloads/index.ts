import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { JobHandler } from '../batch/index.ts';
import type { CachedEntity } from '../cache/index.ts';
import type { JobCatalog } from './job-types.ts';

export { defineJobTypes, jobResources, type JobCatalog, type JobType } from './job-types.ts';
export { defineRegistry, type Registry } from './registry.ts';
import { REASONS } from '../errors/index.ts';

/** What the worker hands a workload when it builds its jobs, once per container. */
export interface WorkloadRuntime {
  readonly stateTableName: string;
  /** The worker's document client, for jobs that read an item before they plan their writes. */
  readonly documents: DynamoDBDocumentClient;
  /** The value of one of the workload's declared {@link Workload.settings} (checked present at cold start). */
  setting(name: string): string;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * A team's domain, plugged into the framework: its job types and what they need. The framework
 * knows no workload: the app lists its workloads in one registry module (`defineRegistry`) and
 * hands it to the stack (`BallastStack`'s `registry`), which bundles each function with only
 * what it uses.
 *
 * Its declaration holds no job code: the handlers live in the module {@link jobs} names, which
 * only the worker's bundle imports, so the read API, the invalidator and the repair carry none.
 */
export interface Workload {
  /** Lowercase letters, digits and hyphens, e.g. `'orders'`: its metrics, logs and reasons carry it. */
  readonly name: string;
  /**
   * Environment variables its jobs read through {@link WorkloadRuntime.setting}, e.g. an external
   * API's base URL. The worker refuses to start without them, naming each.
   * @default []
   */
  readonly settings?: readonly string[];
  /**
   * The reasons its jobs fail with besides the framework's (`FatalError(reason, …)`), e.g. a
   * business rule's refusal. `dependencyRejection` marks an external API refusing a request, which
   * `ballast doctor` reports as a dependency changing behaviour.
   * @default []
   */
  readonly reasons?: readonly WorkloadReason[];
  /**
   * The state-table entities it caches (`defineEntity`): the read API serves their routes, the
   * invalidator tombstones their changes, `ballast cache check` samples them.
   * @default [] - nothing cached
   */
  readonly entities?: readonly CachedEntity[];
  /**
   * Its job types (`defineJobTypes`): producers build and `ballast send` validates with them.
   * Every one needs a handler from {@link jobs}, with the same payload schema.
   */
  readonly jobTypes: JobCatalog;
  /**
   * The module whose default export is its handlers (`export default defineJobs(orders, (runtime) => [...])`),
   * one per job type of {@link jobTypes}; usually `new URL('./jobs.ts', import.meta.url)`.
   */
  readonly jobs: URL | string;
  /**
   * The module whose default export is what it adds to local runs (`WorkloadLocal` of
   * `@ballast-stack/ballast/local`: fakes of its external APIs, demo traffic, chaos traffic).
   * Never bundled into a function.
   * @default - nothing: no fakes (its settings point nowhere locally), no demo, no chaos traffic
   */
  readonly local?: URL | string;
  /**
   * Words that only this workload may use, so a boundary test can tell when a framework (or
   * another workload) starts to know it.
   * @default []
   */
  readonly vocabulary?: readonly RegExp[];
}

/** A workload's job handlers, built once per worker container: the default export of its {@link Workload.jobs} module. */
export interface WorkloadJobs {
  /** The {@link Workload.name} they belong to. */
  readonly workload: string;
  build(runtime: WorkloadRuntime): readonly JobHandler[];
}

/**
 * Declares a workload's handlers, the default export of the module its `jobs` names.
 * @example
 * export default defineJobs(orders, (runtime) => [placeJob(runtime), cancelJob(runtime)]);
 */
export function defineJobs(workload: Pick<Workload, 'name'>, build: (runtime: WorkloadRuntime) => readonly JobHandler[]): WorkloadJobs {
  return { workload: workload.name, build };
}

/** A dead-letter reason a workload adds: a stable code (a DLQ attribute, a metric dimension, a replay filter). */
export interface WorkloadReason {
  /** Lowercase words joined by hyphens, e.g. `insufficient-funds`. */
  readonly code: string;
  /** An external API refused the request. @default false */
  readonly dependencyRejection?: boolean;
}

const NAME = /^[a-z][a-z0-9-]*$/;
const FRAMEWORK_REASONS: ReadonlySet<string> = new Set(Object.values(REASONS));

/** Declares a workload, refusing a malformed name or reason, or a framework reason. */
export function defineWorkload<const W extends Workload>(workload: W): W {
  if (!NAME.test(workload.name)) throw new Error(`workload name '${workload.name}' must be lowercase letters, digits and hyphens, starting with a letter`);
  for (const { code } of workload.reasons ?? []) {
    if (!NAME.test(code)) throw new Error(`workload ${workload.name}: reason '${code}' must be lowercase words joined by hyphens`);
    if (FRAMEWORK_REASONS.has(code)) throw new Error(`workload ${workload.name}: reason '${code}' is the framework's own; name yours differently`);
  }
  return workload;
}

/**
 * Every reason the workloads declare, refusing one declared twice (by two workloads, or one): a
 * reason names one cause wherever it appears.
 */
export function workloadReasons(workloads: readonly Workload[]): WorkloadReason[] {
  const owners = new Map<string, string>();
  for (const workload of workloads) {
    for (const { code } of workload.reasons ?? []) {
      const owner = owners.get(code);
      if (owner) throw new Error(`reason ${code} is declared by both ${owner} and ${workload.name}`);
      owners.set(code, workload.name);
    }
  }
  return workloads.flatMap((workload) => workload.reasons ?? []);
}

/** Every setting the workloads declare, each once. */
export function workloadSettings(workloads: readonly Workload[]): string[] {
  return [...new Set(workloads.flatMap((workload) => workload.settings ?? []))];
}

/**
 * The job handlers of every workload, refusing a workload without its handlers' module, two
 * workloads (or one) registering the same type (a message of that type would otherwise run
 * whichever came first), a handler of a type the workload does not declare, a declared type
 * without a handler, and a handler whose payload schema is not its declared type's (producers and
 * the worker would drift).
 */
export function workloadJobs(workloads: readonly Workload[], modules: readonly WorkloadJobs[], runtime: WorkloadRuntime): JobHandler[] {
  const owners = new Map<string, string>();
  const jobs: JobHandler[] = [];
  for (const workload of workloads) {
    const own = modules.find((module) => module.workload === workload.name);
    if (!own) throw new Error(`workload ${workload.name}: no handlers given; its jobs module must \`export default defineJobs(${workload.name}, ...)\``);
    const handlers = own.build(runtime);
    for (const job of handlers) {
      const owner = owners.get(job.type);
      if (owner) throw new Error(`job type ${job.type} is registered by both ${owner} and ${workload.name}: each type has one owner`);
      owners.set(job.type, workload.name);
      const declared = workload.jobTypes[job.type];
      if (!declared) throw new Error(`workload ${workload.name}: handler of ${job.type}, which its jobTypes do not declare`);
      if (declared.payload !== job.payload) throw new Error(`workload ${workload.name}: the handler of ${job.type} validates with another schema than its declared type's`);
      jobs.push(job);
    }
    const missing = Object.keys(workload.jobTypes).filter((type) => !handlers.some((job) => job.type === type));
    if (missing.length > 0) throw new Error(`workload ${workload.name}: no handler for ${missing.join(', ')}`);
  }
  return jobs;
}

/** Merges the job types of workloads whose types are all known statically (a tuple), keeping their types. */
export type CatalogOf<W extends readonly Workload[]> = UnionToIntersection<W[number]['jobTypes']> & JobCatalog;
type UnionToIntersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void ? I : never;

/**
 * Every workload's job types in one catalog (what producers, `ballast send` and the replay check
 * validate with), refusing a type declared twice.
 */
export function workloadCatalog<const W extends readonly Workload[]>(workloads: W): CatalogOf<W> {
  const catalog: Record<string, JobCatalog[string]> = {};
  const owners = new Map<string, string>();
  for (const workload of workloads) {
    for (const [type, spec] of Object.entries(workload.jobTypes)) {
      const owner = owners.get(type);
      if (owner) throw new Error(`job type ${type} is declared by both ${owner} and ${workload.name}: each type has one owner`);
      owners.set(type, workload.name);
      catalog[type] = spec;
    }
  }
  return catalog as CatalogOf<W>;
}

/**
 * The cached entities of every workload, refusing a name or a read route claimed twice: an entity
 * name is a key prefix on the table and in the cache, and two owners would invalidate each other.
 */
export function workloadEntities(workloads: readonly Workload[]): CachedEntity[] {
  const owners = new Map<string, string>();
  const claim = (what: string, workload: string) => {
    const owner = owners.get(what);
    if (owner) throw new Error(`${what} is declared by both ${owner} and ${workload}`);
    owners.set(what, workload);
  };
  for (const workload of workloads) {
    for (const entity of workload.entities ?? []) {
      claim(`cached entity ${entity.name}`, workload.name);
      if (entity.route !== undefined) claim(`read route /${entity.route}`, workload.name);
    }
  }
  return workloads.flatMap((workload) => workload.entities ?? []);
}
