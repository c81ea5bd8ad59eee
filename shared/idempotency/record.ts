import { hash as digest } from 'node:crypto';
import { CONTROL_TABLE } from '../tables/index.ts';
import type { TransactItem } from '../lock/index.ts';

/** Lifecycle of an idempotency record. A missing record means "never ran (or expired)". */
export const STATUS = { inProgress: 'IN_PROGRESS', completed: 'COMPLETED' } as const;
export type Status = (typeof STATUS)[keyof typeof STATUS];

/** An idempotency record as stored on the control table. */
export interface IdempotencyRecord {
  readonly pk: string;
  readonly status: Status;
  readonly payloadHash: string;
  readonly jobType: string;
  readonly jobId: string;
  /** Present while IN_PROGRESS: whose claim it is and until when. */
  readonly ownerToken?: string;
  readonly leaseUntilMs?: number;
  /** Present once COMPLETED: what the job returned, handed to duplicates. */
  readonly result?: unknown;
  readonly completedAtMs?: number;
  readonly expiresAtEpochSeconds: number;
}

/** The job facts an idempotency record is written from. */
export interface JobIdentity {
  readonly idempotencyKey: string;
  readonly type: string;
  readonly jobId: string;
  /** Part of the job's identity: the same key on another resource is another intent, not a duplicate. */
  readonly resourceId: string;
  readonly payload: unknown;
}

export function recordKey(idempotencyKey: string): string {
  return `idem#${idempotencyKey}`;
}

/**
 * SHA-256 of what makes a job the job it is — type, resource and payload — with object keys
 * sorted, so the same intent hashes the same whatever order a producer serialized its fields in.
 * The resource is included because payloads need not name it: a key reused on another account
 * must be refused as reused, never mistaken for a duplicate and dropped.
 */
export function payloadHash(job: { readonly type: string; readonly resourceId: string; readonly payload: unknown }): string {
  let hash = hashes.get(job);
  if (hash === undefined) hashes.set(job, (hash = digest('sha256', canonicalJson([job.type, job.resourceId, job.payload]), 'hex')));
  return hash;
}

// A record's envelope is hashed by the batch (to collapse in-batch duplicates) and again by its
// commit; envelopes are never mutated, so the first hash is kept for the object's lifetime.
const hashes = new WeakMap<object, string>();

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

// A record may be (re)written when absent, past its retention (TTL deletes lazily), or when it is
// an abandoned claim whose lease ran out (its worker crashed between claim and commit).
const WRITABLE = 'attribute_not_exists(pk) OR expiresAtEpochSeconds < :nowSeconds OR (#status = :inProgress AND leaseUntilMs < :nowMs)';

/**
 * `WRITABLE` evaluated on a record read at `nowMs`, with the values `writableValues` gives it:
 * whether a new record's Put would have been refused then. (A comparison with a missing attribute
 * is false in DynamoDB, as `undefined < n` is here.)
 */
export function refusesNewRecord(record: IdempotencyRecord | undefined, nowMs: number): record is IdempotencyRecord {
  if (!record) return false;
  const values = writableValues(nowMs);
  if ((record.expiresAtEpochSeconds as number | undefined) !== undefined && record.expiresAtEpochSeconds < (values[':nowSeconds'] as number)) return false;
  return !(record.status === STATUS.inProgress && record.leaseUntilMs !== undefined && record.leaseUntilMs < nowMs);
}

interface Times {
  readonly nowMs: number;
  readonly retentionSeconds: number;
}

/** One-shot completion for jobs whose effects are all in the same transaction. */
export function completeNewRecordItem(tableName: string, job: JobIdentity, result: unknown, times: Times): TransactItem {
  return {
    Put: {
      TableName: tableName,
      Item: {
        [CONTROL_TABLE.partitionKey]: recordKey(job.idempotencyKey),
        status: STATUS.completed,
        payloadHash: payloadHash(job),
        jobType: job.type,
        jobId: job.jobId,
        result: result ?? null,
        completedAtMs: times.nowMs,
        [CONTROL_TABLE.ttlAttribute]: Math.ceil(times.nowMs / 1000) + times.retentionSeconds,
      },
      ConditionExpression: WRITABLE,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: writableValues(times.nowMs),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Claim: IN_PROGRESS under our owner token until `leaseUntilMs`. */
export function claimRecordItem(
  tableName: string, job: JobIdentity, ownerToken: string, leaseUntilMs: number, times: Times,
): TransactItem {
  return {
    Put: {
      TableName: tableName,
      Item: {
        [CONTROL_TABLE.partitionKey]: recordKey(job.idempotencyKey),
        status: STATUS.inProgress,
        payloadHash: payloadHash(job),
        jobType: job.type,
        jobId: job.jobId,
        ownerToken,
        leaseUntilMs,
        [CONTROL_TABLE.ttlAttribute]: Math.ceil(times.nowMs / 1000) + times.retentionSeconds,
      },
      ConditionExpression: WRITABLE,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: writableValues(times.nowMs),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Completes our own claim; refused if the claim is no longer ours. */
export function completeClaimedRecordItem(
  tableName: string, idempotencyKey: string, ownerToken: string, result: unknown, times: Times,
): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: recordKey(idempotencyKey) },
      UpdateExpression: 'SET #status = :completed, #result = :result, completedAtMs = :nowMs, #ttl = :expires REMOVE ownerToken, leaseUntilMs',
      ConditionExpression: '#status = :inProgress AND ownerToken = :token',
      ExpressionAttributeNames: { '#status': 'status', '#result': 'result', '#ttl': CONTROL_TABLE.ttlAttribute },
      ExpressionAttributeValues: {
        ':completed': STATUS.completed,
        ':inProgress': STATUS.inProgress,
        ':token': ownerToken,
        ':result': result ?? null,
        ':nowMs': times.nowMs,
        ':expires': Math.ceil(times.nowMs / 1000) + times.retentionSeconds,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Heartbeat on our claim. */
export function extendClaimItem(tableName: string, idempotencyKey: string, ownerToken: string, leaseUntilMs: number): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: recordKey(idempotencyKey) },
      UpdateExpression: 'SET leaseUntilMs = :lease',
      ConditionExpression: '#status = :inProgress AND ownerToken = :token',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':inProgress': STATUS.inProgress, ':token': ownerToken, ':lease': leaseUntilMs },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Gives up our claim so a retry need not wait for the lease (failure path only). */
export function abandonClaimItem(tableName: string, idempotencyKey: string, ownerToken: string): TransactItem {
  return {
    Delete: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: recordKey(idempotencyKey) },
      ConditionExpression: '#status = :inProgress AND ownerToken = :token',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':inProgress': STATUS.inProgress, ':token': ownerToken },
    },
  };
}

function writableValues(nowMs: number): Record<string, unknown> {
  return { ':nowSeconds': Math.floor(nowMs / 1000), ':nowMs': nowMs, ':inProgress': STATUS.inProgress };
}
