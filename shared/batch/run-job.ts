import type { Logger } from '@aws-lambda-powertools/logger';
import { trace } from '@opentelemetry/api';
import type { Envelope } from '../envelope/index.ts';
import { ClaimHeldError, classify, FatalError, FencedError, REASONS, TransientError, type BallastError } from '../errors/index.ts';
import { describeIssues, safeParse } from '../validation/index.ts';
import type { Claim, CommitPlan, Completion, IdempotencyStore, ScreenedRecords } from '../idempotency/index.ts';
import { lockKey } from '../lock/index.ts';
import { annotate, ATTRIBUTES, inSpan, SPANS } from '../tracing/index.ts';
import type { JobHandler } from './types.ts';

export interface RunJobOptions {
  readonly store: IdempotencyStore;
  readonly attempt: number;
  /** The record's logger, made on first use (most jobs never log). */
  readonly logger: () => Logger;
  /** Aborted by the pipeline when the invocation's deadline approaches. */
  readonly signal: AbortSignal;
  /** Records waiting behind this one in its batch lane: a one-shot commit others wait on is grouped apart. @default 0 */
  readonly followers?: number;
  /** The batch's records as `IdempotencyStore.screen` read them, for a one-shot commit. @default - not screened */
  readonly screened?: ScreenedRecords;
  /** Every resource the job touches (its `resourceId` among them); an external job locks them all. @default [envelope.resourceId] */
  readonly resources?: readonly string[];
  /** Called on every heartbeat, to push the message's visibility out together with the lease. */
  readonly onHeartbeat?: (claim: Claim) => Promise<void>;
  /**
   * Attempts at a claimed commit (after the external effect already happened) or at giving a
   * claim back, when they fail transiently: a `TransactionConflict` with another job committing on
   * the same item, throttling, a dropped connection. Tried again in place, jittered. A DynamoDB-only
   * commit is tried again in place only after a `TransactionConflict`, which lasts as long as the
   * other transaction (milliseconds), where a redelivery would wait out a backoff of seconds. The
   * waits are jittered and doubling, 25–50 ms first, capped at 100–200 ms: a hot item meets one
   * conflict after another while group commits hold many items at once, and each lasts milliseconds.
   * @default 8
   */
  readonly commitAttempts?: number;
  /**
   * Called on every in-place retry after a `TransactionConflict` (of a commit, or of a claim given
   * back), with what was retried: the worker counts them and logs them at DEBUG.
   */
  readonly onConflict?: (retry: Record<string, unknown> & { readonly operation: string }) => void;
  /** @default Math.random */
  readonly random?: () => number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * Runs one validated envelope through its handler and the idempotency store: one transaction for
 * DynamoDB-only jobs; claim → side effect → commit for external ones, with heartbeats only when
 * the side effect outlives a third of the lease.
 *
 * The idempotency record is written from the envelope as sent, not from the handler's parsed
 * payload: a newer worker whose schema adds an optional field (or a default) must recognise a
 * message an older one committed as the same job.
 */
export async function runJob(envelope: Envelope, handler: JobHandler, options: RunJobOptions): Promise<Completion> {
  const parsed = safeParse(handler.payload, envelope.payload);
  if (!parsed.success) {
    throw new FatalError(REASONS.invalidPayload, `payload of ${envelope.type}: ${describeIssues(parsed.error)}`);
  }
  // The logger stays a getter (a spread would call it): most jobs never log.
  const contextWith = <X extends object>(extra: X) => ({
    envelope, payload: parsed.data, attempt: options.attempt, signal: options.signal, ...extra,
    get logger() { return options.logger(); },
  });
  if (handler.effects === 'dynamodb') {
    const plan = await handler.plan(contextWith({}));
    return traceCommit('once', undefined, () => inPlace('commit', () => options.store.commitOnce(envelope, plan, { followers: options.followers, screened: options.screened }), options, Number.POSITIVE_INFINITY,
      (failure) => failure.reason === REASONS.transactionConflict));
  }

  const claimed = await inSpan(SPANS.claim, {}, async (span) => {
    const outcome = await options.store.claim({ ...envelope, resources: options.resources });
    annotate(span, () => (outcome.kind === 'claimed'
      ? { [ATTRIBUTES.outcome]: 'claimed', [ATTRIBUTES.fence]: outcome.claim.fence, [ATTRIBUTES.lockKeys]: outcome.claim.resourceIds.map(lockKey) }
      : { [ATTRIBUTES.outcome]: 'duplicate' }));
    return outcome;
  });
  if (claimed.kind === 'duplicate') return claimed;
  const lease = new AbortController();
  const heartbeat = startHeartbeat(claimed.claim, options, lease);
  let plan: CommitPlan;
  try {
    plan = await handler.perform(contextWith({ signal: AbortSignal.any([options.signal, lease.signal]), claim: claimed.claim }));
  } catch (error) {
    // The effect did not happen (or the external API refused it): give the claim back so the retry
    // need not wait out the lease.
    const held = await heartbeat.stop();
    throw heldBack(error, held, await abandon(held, options), options);
  }
  // The effect happened. A heartbeat still in flight is awaited first, or its transaction would
  // conflict with the commit on the same items.
  const claim = await heartbeat.stop();
  try {
    return await commitInPlace(claim, plan, options);
  } catch (error) {
    // Refused for good (a business rule, a DynamoDB limit): the job goes to the DLQ, so the lock
    // is released for the resource's other jobs. A transient failure keeps the claim: it expires
    // with its lease, and the redelivery replays the external call under the same key.
    throw error instanceof FatalError ? heldBack(error, claim, await abandon(claim, options), options) : error;
  }
}

/**
 * Gives a claim and its lock back (retried in place: a claim left behind would sit IN_PROGRESS
 * past its lease); if it is no longer ours the condition fails and nothing changes. Resolves with
 * why it could not, if it could not.
 */
async function abandon(claim: Claim, options: RunJobOptions): Promise<BallastError | undefined> {
  try {
    await inPlace('abandoning the claim', () => options.store.abandon(claim), options, Number.POSITIVE_INFINITY);
    return undefined;
  } catch (error) {
    options.logger().warn('could not give the claim back; it expires with its lease', { error: error as Error });
    return classify(error);
  }
}

/** Why an abandon may succeed on a later receive: what a retry in place also waits out. */
const PASSING_FAILURES: ReadonlySet<string> = new Set([REASONS.transactionConflict, REASONS.throttled, REASONS.dependencyUnavailable, REASONS.deadline]);

/**
 * What a job that failed after its claim answers. A verdict (a {@link FatalError}) goes to the DLQ
 * only with the claim given back: dead-lettered while still held, its record would stay
 * IN_PROGRESS for good and its resources locked until the lease ends. So while the claim could
 * not be given back for a passing reason (a conflict, throttling, an outage, the batch's deadline
 * cutting the retries short), the job is left for a later receive instead, once its lease has
 * ended: that receive takes the claim over, meets the same verdict and gives it back. It keeps the
 * verdict's reason; on its last receive it is sent to its queue again as a record waiting for a
 * resource is (its own claim), so its receives never run out while the claim is held. Any other
 * failure (a role without the right, say) would meet the same refusal then: the verdict goes to
 * the DLQ at once.
 */
function heldBack(error: unknown, claim: Claim, notGivenBack: BallastError | undefined, options: RunJobOptions): unknown {
  const verdict = classify(error);
  if (!(verdict instanceof FatalError) || !notGivenBack || !PASSING_FAILURES.has(notGivenBack.reason)) return error;
  // A whole lease, not what is left of the claim's: a heartbeat that landed but whose answer was
  // lost extended the lease further than the claim in hand says, to at most a lease from now.
  const retryAfterMs = options.store.leaseMs;
  return new ClaimHeldError(verdict.reason, `${verdict.message}; its claim could not be given back (${notGivenBack.message}), so it is judged again on a later receive`, {
    cause: error, context: { ...verdict.context, abandonFailure: notGivenBack.reason, retryAfterMs },
  });
}

/**
 * Commits a claimed job with the same claim, retried in place within its lease. What is left after
 * that (or a fence) is thrown with the claim kept: the redelivery waits for the lease, claims anew
 * and replays the external call under the same Idempotency-Key.
 */
function commitInPlace(claim: Claim, plan: CommitPlan, options: RunJobOptions): Promise<Completion> {
  return traceCommit('claimed', claim, () => inPlace('claimed commit', () => options.store.commitClaimed(claim, plan), options, claim.leaseUntilMs));
}

/**
 * The commit's span: how it ended (`committed`, `duplicate`, or `refused` with the reason and the
 * transaction's cancellation reasons, which the store adds), and the claim's fence if it had one.
 */
function traceCommit(kind: 'once' | 'claimed', claim: Claim | undefined, commit: () => Promise<Completion>): Promise<Completion> {
  return inSpan(SPANS.commit, {}, async (span) => {
    annotate(span, () => ({ [ATTRIBUTES.commitKind]: kind, ...(claim ? { [ATTRIBUTES.fence]: claim.fence } : {}) }));
    try {
      const completion = await commit();
      annotate(span, () => ({ [ATTRIBUTES.outcome]: completion.kind }));
      return completion;
    } catch (error) {
      annotate(span, () => ({ [ATTRIBUTES.outcome]: 'refused' }));
      throw error;
    }
  });
}

/** The longest wait between two in-place tries, before jitter. */
const MAX_RETRY_DELAY_MS = 200;

/**
 * Runs `operation`, trying transient failures (not fences; of those, only what `worthRetrying`
 * accepts) again, jittered, until the attempts run out, the invocation's deadline signal fires, or
 * the next try would start after `untilMs`.
 */
async function inPlace<T>(
  what: string, operation: () => Promise<T>, options: RunJobOptions, untilMs: number, worthRetrying: (failure: BallastError) => boolean = () => true,
): Promise<T> {
  const attempts = options.commitAttempts ?? 8;
  const random = options.random ?? Math.random;
  const nowMs = options.nowMs ?? Date.now;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation();
    } catch (error) {
      const failure = classify(error);
      const delayMs = Math.round(Math.min(MAX_RETRY_DELAY_MS, 25 * 2 ** attempt) * (0.5 + random() / 2));
      const retryable = failure instanceof TransientError && !(failure instanceof FencedError) && worthRetrying(failure);
      if (!retryable || attempt >= attempts || options.signal.aborted || nowMs() + delayMs >= untilMs) throw failure;
      // A conflict is routine contention on a hot item, resolved by the next try: the caller counts
      // it (a line each would cost more than the retry). Anything else is worth a WARN with its error.
      if (failure.reason === REASONS.transactionConflict) {
        options.onConflict?.({ operation: what, attempt, delayMs, ...failure.context });
      } else {
        options.logger().warn(`${what} failed; retrying in place`, { reason: failure.reason, attempt, delayMs, error: failure });
      }
      trace.getActiveSpan()?.addEvent('retrying in place', { [ATTRIBUTES.reason]: failure.reason, attempt, delayMs });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

function startHeartbeat(initial: Claim, options: RunJobOptions, lease: AbortController) {
  let current = initial;
  let inFlight: Promise<void> | undefined;
  const intervalMs = Math.max(1, Math.floor(options.store.leaseMs / 3));
  const timer = setInterval(() => {
    // One heartbeat at a time: two overlapping transactions on the same items would conflict.
    if (inFlight) return;
    inFlight = options.store.extend(current)
      .then(async (extended) => {
        current = extended;
        await options.onHeartbeat?.(extended);
      })
      .catch((error: unknown) => {
        // A fence means someone else holds the lease now: stop. Anything else (throttling, a
        // dropped connection) is tried again on the next beat while the lease still runs.
        if (error instanceof FencedError || (options.nowMs ?? Date.now)() >= current.leaseUntilMs) {
          options.logger().warn('heartbeat failed; aborting the job', { error: error as Error });
          lease.abort(error);
        } else {
          options.logger().warn('heartbeat failed; trying again on the next beat', { error: error as Error });
        }
      })
      .finally(() => void (inFlight = undefined));
  }, intervalMs);
  timer.unref();
  return {
    /** Stops beating, waits for a heartbeat in flight, and returns the latest claim. */
    stop: async (): Promise<Claim> => {
      clearInterval(timer);
      await inFlight;
      return current;
    },
  };
}
