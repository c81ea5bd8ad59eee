import type { JobHandler } from '../batch/index.ts';
import type { CachedEntity } from '../cache/index.ts';
import { REASONS } from '../errors/index.ts';

/** What the worker hands a workload when it builds its jobs, once per container. */
export interface WorkloadRuntime {
  readonly stateTableName: string;
  /** The value of one of the workload's declared {@link Workload.settings} (checked present at cold start). */
  setting(name: string): string;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * A team's domain, plugged into the framework: its job types and what they need. The framework
 * (`shared/`, `functions/`, `infra/`, `cli/`, `local/`) knows no workload; the one list of them
 * is `workloads/registry.ts`.
 */
export interface Workload {
  /** Its folder under `workloads/`, lowercase, e.g. `'accounts'`. */
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
  /** One handler per job type it owns, `<entity>.<verb>`. */
  jobs(runtime: WorkloadRuntime): readonly JobHandler[];
  /**
   * Words that only this workload may use, so the boundary test can tell when the framework
   * starts to know it (test/unit/workload-boundary.test.ts).
   */
  readonly vocabulary: readonly RegExp[];
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

/** Declares a workload, refusing a malformed name or reason, a framework reason, or an empty vocabulary. */
export function defineWorkload<const W extends Workload>(workload: W): W {
  if (!NAME.test(workload.name)) throw new Error(`workload name '${workload.name}' must be lowercase letters, digits and hyphens, starting with a letter`);
  if (workload.vocabulary.length === 0) throw new Error(`workload ${workload.name}: declare its vocabulary, the words only it may use`);
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
 * The job handlers of every workload, refusing two workloads (or one) registering the same type:
 * a message of that type would otherwise run whichever came first.
 */
export function workloadJobs(workloads: readonly Workload[], runtime: WorkloadRuntime): JobHandler[] {
  const owners = new Map<string, string>();
  const jobs: JobHandler[] = [];
  for (const workload of workloads) {
    for (const job of workload.jobs(runtime)) {
      const owner = owners.get(job.type);
      if (owner) throw new Error(`job type ${job.type} is registered by both ${owner} and ${workload.name}: each type has one owner`);
      owners.set(job.type, workload.name);
      jobs.push(job);
    }
  }
  return jobs;
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
