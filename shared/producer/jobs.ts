import type * as z from 'zod/mini';
import { safeParse } from '../validation/index.ts';
import { createEnvelope, describeIssues, type Envelope } from '../envelope/index.ts';
import type { JobCatalog, JobType } from '../workloads/job-types.ts';
import { InvalidJobError, type ProducerErrorOptions } from './errors.ts';

/** What every job carries besides its payload. */
export interface JobCommon {
  /**
   * The business intent's key (an order id, a transfer id): the effect happens once per key.
   * Required for the types that declare `requiresIdempotencyKey`.
   */
  readonly idempotencyKey?: string;
  /** @default - a random UUID */
  readonly jobId?: string;
  /** @default - a random UUID */
  readonly traceId?: string;
  /** Who built the job, e.g. `billing@1.4.2`. @default 'unknown' */
  readonly producerVersion?: string;
  /** @default - now */
  readonly producedAt?: Date;
}

/** A job as producers describe it (and as each line of a `ballast send` file reads). */
export interface JobRequest extends JobCommon {
  readonly type: string;
  readonly resourceId: string;
  readonly payload: Record<string, unknown>;
}

/** The input of one job type, its payload typed by the type's schema. */
export type JobInput<J extends JobType<any>> = JobCommon & {
  readonly resourceId: string;
  readonly payload: z.input<J['payload']>;
};

/** Builds a job of any type of its catalog, typed by the type's payload schema. */
export type JobBuilder<C extends JobCatalog> = <T extends keyof C & string>(type: T, input: JobInput<C[T]>) => Envelope;

/**
 * Validates a job against its type's payload schema (from `catalog`, the registered workloads'
 * job types) and builds its envelope.
 *
 * @throws InvalidJobError naming the unknown type or every invalid field; nothing is built
 * @example
 * import { buildJob } from '@ballast-stack/ballast/producer';
 * import { registry } from './registry.ts';
 * const JOB_CATALOG = registry.catalog;
 * const envelope = buildJob(JOB_CATALOG, { type: 'widget.make', resourceId: 'w-1', idempotencyKey: 'batch-77', payload: { count: 500 } });
 */
export function buildJob(catalog: JobCatalog, request: JobRequest, errorOptions: ProducerErrorOptions = {}): Envelope {
  const spec = Object.hasOwn(catalog, request.type) ? catalog[request.type] : undefined;
  if (!spec) {
    throw new InvalidJobError(`unknown job type '${String(request.type)}' (known: ${Object.keys(catalog).join(', ')})`, {
      ...errorOptions, context: { type: request.type },
    });
  }
  const type = request.type;
  if (typeof request.resourceId !== 'string' || request.resourceId === '') {
    throw new InvalidJobError(`${type}: resourceId is required (${spec.resourceIdIs ?? 'the resource id'})`, errorOptions);
  }
  if (spec.requiresIdempotencyKey && (typeof request.idempotencyKey !== 'string' || request.idempotencyKey === '')) {
    throw new InvalidJobError(`${type}: idempotencyKey is required (the business intent's id, e.g. an order id)`, errorOptions);
  }
  const payload = safeParse(spec.payload, request.payload ?? {});
  if (!payload.success) {
    throw new InvalidJobError(`${type}: payload.${describeIssues(payload.error)}`, { ...errorOptions, context: { type } });
  }
  try {
    return createEnvelope({ ...request, type, payload: payload.data as Record<string, unknown> });
  } catch (error) {
    throw new InvalidJobError(`${type}: ${(error as Error).message}`, { ...errorOptions, cause: error });
  }
}

/**
 * A typed builder over `catalog`: one function for every job type, no hand-written builder per
 * type; `defaults` (e.g. the producer's version) apply unless the input names its own.
 *
 * @example
 * import { jobBuilder } from '@ballast-stack/ballast/producer';
 * import { registry } from './registry.ts';
 * const JOB_CATALOG = registry.catalog;
 * const job = jobBuilder(JOB_CATALOG, { producerVersion: 'shop@2.1.0' });
 * const envelope = job('widget.make', { resourceId: 'w-1', idempotencyKey: 'batch-77', payload: { count: 500 } });
 */
export function jobBuilder<C extends JobCatalog>(catalog: C, defaults: Pick<JobCommon, 'producerVersion'> = {}): JobBuilder<C> {
  return (type, input) => buildJob(catalog, { ...defaults, ...input, type, payload: input.payload as Record<string, unknown> });
}
