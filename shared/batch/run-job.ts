import type { Logger } from '@aws-lambda-powertools/logger';
import type { Envelope } from '../envelope/index.ts';
import { FatalError, REASONS } from '../errors/index.ts';
import { describeIssues } from '../envelope/index.ts';
import type { Claim, Completion, IdempotencyStore } from '../idempotency/index.ts';
import type { JobHandler } from './types.ts';

export interface RunJobOptions {
  readonly store: IdempotencyStore;
  readonly attempt: number;
  readonly logger: Logger;
  /** Aborted by the pipeline when the invocation's deadline approaches. */
  readonly signal: AbortSignal;
  /** Called on every heartbeat, to push the message's visibility out together with the lease. */
  readonly onHeartbeat?: (claim: Claim) => Promise<void>;
}

/**
 * Runs one validated envelope through its handler and the idempotency store: one transaction for
 * DynamoDB-only jobs; claim → side effect → commit for external ones, with heartbeats only when
 * the side effect outlives a third of the lease.
 */
export async function runJob(envelope: Envelope, handler: JobHandler, options: RunJobOptions): Promise<Completion> {
  const parsed = handler.payload.safeParse(envelope.payload);
  if (!parsed.success) {
    throw new FatalError(REASONS.invalidPayload, `payload of ${envelope.type}: ${describeIssues(parsed.error)}`);
  }
  const job = { ...envelope, payload: parsed.data };
  const context = { envelope, payload: parsed.data, attempt: options.attempt, logger: options.logger, signal: options.signal };
  if (handler.effects === 'dynamodb') {
    return options.store.commitOnce(job, await handler.plan(context));
  }

  const claimed = await options.store.claim(job);
  if (claimed.kind === 'duplicate') return claimed;
  const lease = new AbortController();
  const heartbeat = startHeartbeat(claimed.claim, options, lease);
  try {
    const plan = await handler.perform({ ...context, signal: AbortSignal.any([options.signal, lease.signal]), claim: claimed.claim });
    heartbeat.stop();
    return await options.store.commitClaimed(heartbeat.claim(), plan);
  } catch (error) {
    heartbeat.stop();
    // Give the claim back so the retry need not wait out the lease; if it is no longer ours the
    // condition fails and nothing changes.
    await options.store.abandon(heartbeat.claim()).catch((abandonError: unknown) =>
      options.logger.warn('could not abandon claim; it will expire with its lease', { error: abandonError as Error }));
    throw error;
  }
}

function startHeartbeat(initial: Claim, options: RunJobOptions, lease: AbortController) {
  let current = initial;
  const intervalMs = Math.max(1, Math.floor(options.store.leaseMs / 3));
  let beating = false;
  const timer = setInterval(() => {
    // One heartbeat at a time: two overlapping transactions on the same items would conflict.
    if (beating) return;
    beating = true;
    options.store.extend(current)
      .then(async (extended) => {
        current = extended;
        await options.onHeartbeat?.(extended);
      })
      .catch((error: unknown) => {
        options.logger.warn('heartbeat failed; aborting the job', { error: error as Error });
        lease.abort(error);
      })
      .finally(() => void (beating = false));
  }, intervalMs);
  timer.unref();
  return { claim: () => current, stop: () => clearInterval(timer) };
}
