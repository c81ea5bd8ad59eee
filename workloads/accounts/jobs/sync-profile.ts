import { accountKey, JOB_TYPES, SYNC_PROFILE, type SyncProfile } from '../schemas.ts';
import { FatalError } from '@ballast-stack/ballast';
import { callExternalApi } from '@ballast-stack/ballast';
import { ACCOUNT_REASONS } from '../reasons.ts';
import type { ExternalJob } from '@ballast-stack/ballast';
import { STATE_TABLE } from '@ballast-stack/ballast';

export interface SyncProfileJobOptions {
  readonly stateTableName: string;
  /** Base URL of the partner's profile API, e.g. `https://partner.example.com`. */
  readonly partnerApiUrl: string;
  /**
   * Give up on one partner call after this long (the job is retried).
   * @default 5_000
   */
  readonly partnerTimeoutMs?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * `account.sync-profile`: asks the partner API for the account's profile and stores it on the
 * account. It runs under the account's lock; the idempotency key goes to the partner as the
 * `Idempotency-Key` header (so a retry after a crash gets the same answer, not a second effect)
 * and the lock's fence as `X-Fencing-Token` (so the partner can refuse a stalled former holder).
 */
export function syncProfileJob(options: SyncProfileJobOptions): ExternalJob<SyncProfile> {
  const nowMs = options.nowMs ?? Date.now;
  const base = options.partnerApiUrl.replace(/\/+$/, '');
  return {
    type: JOB_TYPES.syncProfile,
    payload: SYNC_PROFILE,
    effects: 'external',
    async perform({ envelope, payload, claim, signal }) {
      const profile = await callExternalApi({
        name: 'partner API',
        url: `${base}/profiles/${encodeURIComponent(envelope.resourceId)}/sync`,
        body: { reason: payload.reason ?? null },
        idempotencyKey: envelope.idempotencyKey,
        fence: claim.fence,
        signal,
        timeoutMs: options.partnerTimeoutMs,
        rejectedReason: ACCOUNT_REASONS.partnerRejected,
      });
      return {
        result: { accountId: envelope.resourceId, profileRevision: profile.revision ?? null },
        writes: [{
          item: {
            Update: {
              TableName: options.stateTableName,
              Key: { [STATE_TABLE.partitionKey]: accountKey(envelope.resourceId) },
              UpdateExpression: 'SET profile = :profile, updatedAt = :now ADD version :one',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: { ':profile': profile, ':now': new Date(nowMs()).toISOString(), ':one': 1 },
            },
          },
          onConditionFailed: () => new FatalError(ACCOUNT_REASONS.accountNotFound, `account ${envelope.resourceId} does not exist`),
        }],
      };
    },
  };
}
