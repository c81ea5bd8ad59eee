import { randomUUID } from 'node:crypto';
import { CURRENT_SCHEMA_VERSION, ENVELOPE_V1, type Envelope } from './schema.ts';
import { describeIssues, safeParse } from '../validation/index.ts';
import { activeSpanContext } from '../tracing/index.ts';

export interface EnvelopeInput {
  readonly type: string;
  readonly resourceId: string;
  readonly payload: Record<string, unknown>;
  /**
   * The business intent's key: two envelopes with the same key have their effect once.
   * @default - the job id, which only deduplicates redeliveries of this very envelope
   */
  readonly idempotencyKey?: string;
  /** @default - a random UUID */
  readonly jobId?: string;
  /** For logs: @default - the active OpenTelemetry span's trace id (an API request's), else a random UUID */
  readonly traceId?: string;
  /** @default 'unknown' */
  readonly producerVersion?: string;
  /** @default - the current time */
  readonly producedAt?: Date;
}

/**
 * Builds a valid current-version envelope, filling ids and timestamps.
 *
 * @throws Error naming each invalid field, before anything is sent
 * @example
 * const envelope = createEnvelope({ type: 'widget.make', resourceId: 'w-1', payload: { count: 500 } });
 */
export function createEnvelope(input: EnvelopeInput): Envelope {
  const jobId = input.jobId ?? randomUUID();
  const candidate = {
    schemaVersion: CURRENT_SCHEMA_VERSION,
    type: input.type,
    jobId,
    idempotencyKey: input.idempotencyKey ?? jobId,
    resourceId: input.resourceId,
    traceId: input.traceId ?? activeSpanContext()?.traceId ?? randomUUID(),
    producedAt: (input.producedAt ?? new Date()).toISOString(),
    producerVersion: input.producerVersion ?? 'unknown',
    payload: input.payload,
  };
  const parsed = safeParse(ENVELOPE_V1, candidate);
  if (!parsed.success) throw new Error(`invalid envelope: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

