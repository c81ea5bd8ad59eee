import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { payloadHash, recordKey, STATUS, type IdempotencyRecord } from '../idempotency/index.ts';
import { CONTROL_TABLE } from '../tables/index.ts';
import type { JobCatalog } from '../workloads/job-types.ts';
import { safeParse } from '../validation/index.ts';
import type { DeadLetter } from './dlq-messages.ts';

/** What a replay re-check decided for one dead letter. */
export const REPLAY_DECISIONS = {
  replay: 'replay',
  /** Its key already COMPLETED with the same payload: the effect happened; replaying would be a no-op duplicate. */
  duplicate: 'skip-duplicate',
  /** Its key COMPLETED with another payload: replaying would fail again as idempotency-key-reused. */
  keyReused: 'skip-key-reused',
  /** Another worker holds its claim right now. */
  inProgress: 'skip-in-progress',
  /** The body is not an envelope this version reads (malformed, or an unknown major version). */
  unreadable: 'skip-unreadable',
  /** Unknown job type or a payload its schema refuses: it would fail the same way. */
  invalidPayload: 'skip-invalid-payload',
} as const;
export type ReplayDecision = (typeof REPLAY_DECISIONS)[keyof typeof REPLAY_DECISIONS];

export interface ReplayCheck {
  readonly decision: ReplayDecision;
  readonly detail: string;
}

/**
 * Re-checks a dead letter before it is replayed: the envelope's version and payload must still be
 * valid, and its idempotency record (strongly consistent read) must not show it done or running.
 */
export async function checkReplay(
  letter: DeadLetter, documents: DynamoDBDocumentClient, controlTableName: string, nowMs: number, catalog: JobCatalog,
): Promise<ReplayCheck> {
  const envelope = letter.envelope;
  if (!envelope) return { decision: REPLAY_DECISIONS.unreadable, detail: letter.envelopeProblem ?? 'not an envelope' };
  const spec = Object.hasOwn(catalog, envelope.type) ? catalog[envelope.type] : undefined;
  if (!spec) return { decision: REPLAY_DECISIONS.invalidPayload, detail: `unknown job type '${envelope.type}'` };
  const payload = safeParse(spec.payload, envelope.payload);
  if (!payload.success) return { decision: REPLAY_DECISIONS.invalidPayload, detail: payload.error.issues.map((i: { path: PropertyKey[]; message: string }) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  const out = await documents.send(new GetCommand({
    TableName: controlTableName, Key: { [CONTROL_TABLE.partitionKey]: recordKey(envelope.idempotencyKey) }, ConsistentRead: true,
  }));
  const record = out.Item as IdempotencyRecord | undefined;
  if (!record || record.expiresAtEpochSeconds * 1000 < nowMs) return { decision: REPLAY_DECISIONS.replay, detail: 'no live idempotency record' };
  // Hash what the worker hashes: the payload as sent.
  const samePayload = record.payloadHash === payloadHash(envelope);
  if (record.status === STATUS.completed) {
    return samePayload
      ? { decision: REPLAY_DECISIONS.duplicate, detail: `key ${envelope.idempotencyKey} completed${record.completedAtMs ? ` at ${new Date(record.completedAtMs).toISOString()}` : ''}` }
      : { decision: REPLAY_DECISIONS.keyReused, detail: `key ${envelope.idempotencyKey} completed with a different payload` };
  }
  if (record.status === STATUS.inProgress && (record.leaseUntilMs ?? 0) > nowMs) {
    return { decision: REPLAY_DECISIONS.inProgress, detail: `claimed until ${new Date(record.leaseUntilMs ?? 0).toISOString()}` };
  }
  return { decision: REPLAY_DECISIONS.replay, detail: 'abandoned claim (lease expired)' };
}
