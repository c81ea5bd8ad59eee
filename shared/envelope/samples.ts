import { CURRENT_SCHEMA_VERSION } from './schema.ts';

/**
 * One sample message body per major envelope version this code reads. A new version must prove
 * it parses every one of them before it takes traffic (the pre-traffic readiness check), so a
 * rollout can never strand messages a previous producer already queued. The samples are about
 * the envelope only: their type is no workload's, their payload empty.
 */
export const SAMPLE_ENVELOPE_BODIES: Readonly<Record<number, string>> = {
  1: JSON.stringify({
    schemaVersion: CURRENT_SCHEMA_VERSION,
    type: 'readiness.sample',
    jobId: 'readiness-sample',
    idempotencyKey: 'readiness-sample',
    resourceId: 'readiness-sample',
    traceId: 'readiness-sample',
    producedAt: '2026-01-01T00:00:00.000Z',
    producerVersion: 'readiness',
    payload: {},
  }),
};
