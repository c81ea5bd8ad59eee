import { accountKey, JOB_TYPES, SYNC_PROFILE, type SyncProfile } from '../schemas.ts';
import { FatalError, FencedError, REASONS, TransientError } from '../../../shared/errors/index.ts';
import { ACCOUNT_REASONS } from '../reasons.ts';
import type { ExternalJob } from '../../../shared/batch/index.ts';
import { STATE_TABLE } from '../../../shared/tables/index.ts';

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
      let response: Response;
      try {
        response = await fetch(`${base}/profiles/${encodeURIComponent(envelope.resourceId)}/sync`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': envelope.idempotencyKey,
            'x-fencing-token': String(claim.fence),
          },
          body: JSON.stringify({ reason: payload.reason ?? null }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(options.partnerTimeoutMs ?? 5_000)]),
        });
      } catch (error) {
        throw new TransientError(REASONS.dependencyUnavailable, `partner API unreachable: ${(error as Error).message}`, { cause: error });
      }
      if (response.status === 429 || response.status >= 500) {
        throw new TransientError(REASONS.dependencyUnavailable, `partner API answered ${response.status}`, { context: { status: response.status } });
      }
      if (response.status === 409) {
        // The partner has seen a newer fence for this account: a newer lock holder exists.
        throw new FencedError(`partner refused fencing token ${claim.fence}: ${await response.text()}`, { context: { fence: claim.fence } });
      }
      if (!response.ok) {
        throw new FatalError(ACCOUNT_REASONS.partnerRejected, `partner API rejected the sync: ${response.status} ${await response.text()}`,
          { context: { status: response.status } });
      }
      const profile = await partnerProfile(response);
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

/**
 * The partner's answer as a profile: a JSON object, or the sync is rejected. A 200 carrying an
 * array, a string or broken JSON is the partner's bug; storing it would make the account
 * unreadable (every cached read validates the profile as a map).
 */
async function partnerProfile(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new FatalError(ACCOUNT_REASONS.partnerRejected, `partner API answered ${response.status} with a body that is not a JSON object: ${text.slice(0, 120)}`,
      { context: { status: response.status } });
  }
  return body as Record<string, unknown>;
}
