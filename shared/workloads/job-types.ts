import { safeParse, type Schema } from '../validation/index.ts';

/**
 * A job type as producers and the worker both see it: the payload schema one side builds with and
 * the other validates with, so the two cannot drift. The handler that runs it (`plan` or
 * `perform`) is the workload's and uses the same schema object.
 */
export interface JobType<P extends Record<string, unknown> = Record<string, unknown>> {
  readonly payload: Schema<P>;
  /**
   * Producers must name the business intent's key: without one a producer retry would apply the
   * effect twice (money moves, stock moves). Fails closed: a job of such a type without
   * `idempotencyKey` is refused before it is sent.
   * @default false
   */
  readonly requiresIdempotencyKey?: boolean;
  /** What the envelope's `resourceId` names, for error messages, e.g. `'the account id'`. @default 'the resource id' */
  readonly resourceIdIs?: string;
  /**
   * Every resource the job changes, its `resourceId` first: records of a batch that share any of
   * them run one after another, and an external job locks them all (in key order) in its claim.
   * Declare each one the job's writes touch; the framework cannot see inside a plan.
   * @default - [resourceId]
   */
  readonly resources?: (job: { readonly resourceId: string; readonly payload: P }) => readonly string[];
}

/** Job types by their wire name (`<entity>.<verb>`). */
export type JobCatalog = Readonly<Record<string, JobType<any>>>;

const TYPE_NAME = /^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*$/;

/** Declares a workload's job types, refusing a name that is not `<entity>.<verb>` in lowercase words. */
export function defineJobTypes<const C extends JobCatalog>(catalog: C): C {
  for (const type of Object.keys(catalog)) {
    if (!TYPE_NAME.test(type)) throw new Error(`job type '${type}' must be '<entity>.<verb>', lowercase words joined by hyphens`);
  }
  return catalog;
}

/**
 * The resources a job touches, per its type's {@link JobType.resources}: never empty, its
 * `resourceId` always among them. An unknown type, a payload its schema refuses or a throwing
 * declaration yields `[resourceId]` (the job is refused later, on its own).
 */
export function jobResources(catalog: JobCatalog, job: { readonly type: string; readonly resourceId: string; readonly payload: unknown }): string[] {
  const type = catalog[job.type];
  if (!type?.resources) return [job.resourceId];
  const payload = safeParse(type.payload, job.payload);
  if (!payload.success) return [job.resourceId];
  try {
    return [...new Set([job.resourceId, ...type.resources({ resourceId: job.resourceId, payload: payload.data })])];
  } catch {
    return [job.resourceId];
  }
}
