import * as z from 'zod/mini';
import type { Schema } from '../validation/index.ts';

const text = (maxLength: number) => z.string().check(z.minLength(1), z.maxLength(maxLength));

/**
 * The job envelope, version 1. Every SQS message body ballast reads is one of these.
 *
 * Compatibility policy: readers ignore unknown fields and read any 1.x (a newer minor only adds
 * optional fields); a major version they do not know is retried, not rejected, because a newer
 * worker may be rolling out.
 */
export const ENVELOPE_V1 = z.object({
  /** `<major>.<minor>`; see {@link CURRENT_SCHEMA_VERSION}. */
  schemaVersion: z.string().check(z.regex(/^1\.\d+$/)),
  /** Job type, e.g. `widget.make`: selects the handler and its payload schema. */
  type: text(128),
  /** Unique per envelope (a redelivery keeps it; a producer retry may not). */
  jobId: text(128),
  /** Same key ⇒ same intent: the effect happens once per key for the retention window. */
  idempotencyKey: text(256),
  /** The resource the job changes; jobs on one resource are serialized and locked by it. */
  resourceId: text(256),
  traceId: text(128),
  /** ISO-8601 instant the producer created the envelope. */
  producedAt: z.iso.datetime({ offset: true }),
  /** Version of the producer that built it, for "does only the new version fail?" questions. */
  producerVersion: text(64),
  payload: z.record(z.string(), z.unknown()),
});

export type Envelope = z.infer<typeof ENVELOPE_V1>;

/** The schema version new envelopes are written with. */
export const CURRENT_SCHEMA_VERSION = '1.0';

/** Major versions this code reads, mapped to their schemas. */
export const ENVELOPE_SCHEMAS: Readonly<Record<number, Schema<Envelope>>> = { 1: ENVELOPE_V1 };

/** Major versions this code reads (what a pre-traffic check must prove it can parse). */
export const SUPPORTED_MAJOR_VERSIONS: readonly number[] = Object.keys(ENVELOPE_SCHEMAS).map(Number);
