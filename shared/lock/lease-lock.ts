import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { CONTROL_TABLE } from '../tables/index.ts';

/** One item of a DynamoDB transaction, in document (native JS) form. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * A lease lock on one resource, as stored on the control table.
 *
 * `fence` only ever grows: every acquisition stores a value strictly greater than the last one
 * (the acquisition time in ms, or last + 1 when clocks disagree). Because the new value is chosen
 * by the acquirer and guarded by the condition `fence < :fence`, it is known without reading it
 * back, which keeps a claim to one round trip. TTL removes the item only long after the lease, so
 * the fence never resets while it matters.
 */
export interface LockItem {
  readonly pk: string;
  readonly ownerToken?: string;
  readonly fence: number;
  readonly leaseUntilMs: number;
  readonly expiresAtEpochSeconds: number;
}

/** What a holder needs to prove it still holds the lock. */
export interface LeaseHold {
  readonly resourceId: string;
  readonly ownerToken: string;
  readonly fence: number;
}

/** Lock items are garbage-collected this long after their last lease, never sooner. */
export const LOCK_GC_AFTER_SECONDS = 7 * 24 * 3600;

const LOCK_PREFIX = 'lock#';

export function lockKey(resourceId: string): string {
  return `${LOCK_PREFIX}${resourceId}`;
}

/** The three writes a lock item gets, each conditioned so that only the right holder's lands. */
const LOCK_WRITES = {
  acquire: {
    update: 'SET ownerToken = :token, fence = :fence, leaseUntilMs = :lease, expiresAtEpochSeconds = :gc',
    condition: 'attribute_not_exists(pk) OR (leaseUntilMs < :now AND fence < :fence)',
  },
  extend: { update: 'SET leaseUntilMs = :lease, expiresAtEpochSeconds = :gc', condition: 'ownerToken = :token AND fence = :fence' },
  release: { update: 'SET leaseUntilMs = :zero REMOVE ownerToken', condition: 'ownerToken = :token AND fence = :fence' },
} as const;

export type LockWriteKind = keyof typeof LOCK_WRITES;

/** A lock write read back from a transaction item: which write, on which resource, for which acquisition. */
export interface LockWrite {
  readonly kind: LockWriteKind;
  readonly resourceId: string;
  readonly fence: number;
  /** The lease it leaves on the lock, epoch ms: an acquisition's or a heartbeat's end, 0 for a release. */
  readonly leaseUntilMs: number;
}

/**
 * Recognises an item built by {@link acquireLockItem}, {@link extendLockItem} or
 * {@link releaseLockItem} (document form), for whoever watches the writes on the wire, such as the
 * chaos run's fence watch; undefined for any other item. Kept beside the builders so the two
 * cannot drift apart.
 */
export function lockWriteOf(item: TransactItem): LockWrite | undefined {
  const update = item.Update;
  const key = update?.Key?.[CONTROL_TABLE.partitionKey];
  if (!update || typeof key !== 'string' || !key.startsWith(LOCK_PREFIX)) return undefined;
  const kind = (Object.keys(LOCK_WRITES) as LockWriteKind[]).find((name) => LOCK_WRITES[name].update === update.UpdateExpression);
  const fence = update.ExpressionAttributeValues?.[':fence'];
  const lease = kind === 'release' ? 0 : update.ExpressionAttributeValues?.[':lease'];
  if (!kind || typeof fence !== 'number' || !Number.isFinite(fence) || typeof lease !== 'number' || !Number.isFinite(lease)) return undefined;
  return { kind, resourceId: key.slice(LOCK_PREFIX.length), fence, leaseUntilMs: lease };
}

/** The fence for a new acquisition: now, or one past the highest fence seen if that is later. */
export function nextFence(nowMs: number, lastSeenFence = 0): number {
  return Math.max(nowMs, lastSeenFence + 1);
}

/** Acquire: the lock is free (never held, released, or its lease expired) and the fence grows. */
export function acquireLockItem(tableName: string, hold: LeaseHold, leaseUntilMs: number, nowMs: number): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: lockKey(hold.resourceId) },
      UpdateExpression: LOCK_WRITES.acquire.update,
      ConditionExpression: LOCK_WRITES.acquire.condition,
      ExpressionAttributeValues: {
        ':token': hold.ownerToken,
        ':fence': hold.fence,
        ':lease': leaseUntilMs,
        ':now': nowMs,
        ':gc': Math.ceil(leaseUntilMs / 1000) + LOCK_GC_AFTER_SECONDS,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Release: only by the holder of this very acquisition (owner token and fence). */
export function releaseLockItem(tableName: string, hold: LeaseHold): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: lockKey(hold.resourceId) },
      UpdateExpression: LOCK_WRITES.release.update,
      ConditionExpression: LOCK_WRITES.release.condition,
      ExpressionAttributeValues: { ':token': hold.ownerToken, ':fence': hold.fence, ':zero': 0 },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Heartbeat: extends the lease, again only for the holder of this acquisition. */
export function extendLockItem(tableName: string, hold: LeaseHold, leaseUntilMs: number): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { [CONTROL_TABLE.partitionKey]: lockKey(hold.resourceId) },
      UpdateExpression: LOCK_WRITES.extend.update,
      ConditionExpression: LOCK_WRITES.extend.condition,
      ExpressionAttributeValues: {
        ':token': hold.ownerToken,
        ':fence': hold.fence,
        ':lease': leaseUntilMs,
        ':gc': Math.ceil(leaseUntilMs / 1000) + LOCK_GC_AFTER_SECONDS,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}
