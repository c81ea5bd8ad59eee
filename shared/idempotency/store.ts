import { randomUUID } from 'node:crypto';
import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { trace } from '@opentelemetry/api';
import { withDefaults } from '../options/index.ts';
import {
  FencedError, IdempotencyKeyReusedError, JobInProgressError, LockBusyError, REASONS, requestRejected, TransientError, type BallastError,
} from '../errors/index.ts';
import { acquireLockItem, extendLockItem, lockKey, nextFence, releaseLockItem, type LeaseHold, type LockItem, type TransactItem } from '../lock/index.ts';
import {
  abandonClaimItem, claimRecordItem, completeClaimedRecordItem, completeNewRecordItem, extendClaimItem, payloadHash, refusesNewRecord, STATUS,
  type IdempotencyRecord, type JobIdentity,
} from './record.ts';
import { DuplicateShare, readRecords, type ScreenedRecords } from './screen.ts';
import { MAX_TRANSACTION_ITEMS, transactWrite } from './transact.ts';
import { businessItems, type BusinessWrite } from './business-writes.ts';
import { GroupCommit, type GroupCommitOptions } from './group-commit.ts';
import { annotate, ATTRIBUTES } from '../tracing/index.ts';

/** How a one-shot commit runs: its group commit's options, and the batch's screened records. */
export interface CommitOnceOptions extends GroupCommitOptions {
  /** What {@link IdempotencyStore.screen} read for the job's batch. @default - not screened */
  readonly screened?: ScreenedRecords;
}

/** What a job commits: its business writes and the result duplicates will be handed. */
export interface CommitPlan {
  readonly writes: readonly BusinessWrite[];
  readonly result?: unknown;
}

/** How a commit ended: our writes applied, or the job had already been completed. */
export type Completion = { readonly kind: 'committed' | 'duplicate'; readonly result: unknown };

/**
 * A live claim: the job's IN_PROGRESS record plus the lease lock of every resource it touches,
 * all ours, all with one owner token and one fence (the fence an external API is handed).
 */
export interface Claim extends LeaseHold {
  readonly idempotencyKey: string;
  readonly leaseUntilMs: number;
  /** Every locked resource, in key order; `resourceId` (the envelope's) is among them. */
  readonly resourceIds: readonly string[];
}

export type ClaimOutcome = { readonly kind: 'claimed'; readonly claim: Claim } | { readonly kind: 'duplicate'; readonly result: unknown };

export interface IdempotencyStoreOptions {
  readonly documents: DynamoDBDocumentClient;
  /** The control table (idempotency records and lock items). */
  readonly tableName: string;
  /**
   * How long a completed record suppresses duplicates. Must outlive queue retention + DLQ
   * retention + the replay window (the CDK stack checks this at synth).
   * @default 35 days
   */
  readonly retentionSeconds?: number;
  /**
   * Lease of a claim and its lock; heartbeats extend it while a job runs.
   * @default 30_000
   */
  readonly leaseMs?: number;
  /**
   * Whether the one-shot commits ({@link IdempotencyStore.commitOnce}) started in the same turn of
   * the event loop share `TransactWriteItems` requests (see {@link GroupCommit}): a batch's records
   * then cost one or two requests per wave of lanes instead of one each. Every job still commits
   * exactly once and is answered as if alone; turn it off to give every commit its own transaction.
   * @default true
   */
  readonly groupCommits?: boolean;
  /**
   * With `groupCommits`: the share of this store's last 200 one-shot commits (of those it has made,
   * from its 20th on) that met a duplicate (a completed record, a job in progress elsewhere or a
   * reused key: a refused record Put) at or above which {@link IdempotencyStore.screen} reads a
   * batch's records before its commits. A
   * duplicate in a group commit cancels the whole group, and its companions are sent again: one
   * consistent `BatchGetItem` then costs less than the cancelled writes and the round trip they
   * add (a producer's retry storm, redeliveries after an outage). Below it, a batch pays no read.
   * 1 turns screening off; 0 screens every batch.
   * @default 0.05
   */
  readonly screenAboveDuplicateShare?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

const defaults = { retentionSeconds: 35 * 24 * 3600, leaseMs: 30_000, groupCommits: true, screenAboveDuplicateShare: 0.05, nowMs: Date.now };

/** How many recent one-shot commits the duplicate share is taken over, and how many it needs at least. */
const DUPLICATE_WINDOW = 200;
const DUPLICATE_MINIMUM = 20;

/**
 * The idempotency and lock persistence layer on the control table. Every method is one
 * DynamoDB round trip (a transaction), which one-shot commits started together share (group
 * commit); conflicts are read from the cancellation reasons' `ALL_OLD` items, never by a second read.
 */
export class IdempotencyStore {
  readonly leaseMs: number;
  readonly #documents: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #retentionSeconds: number;
  readonly #nowMs: () => number;
  readonly #group: GroupCommit | undefined;
  readonly #duplicates = new DuplicateShare(DUPLICATE_WINDOW, DUPLICATE_MINIMUM);
  readonly #screenAbove: number;

  constructor(options: IdempotencyStoreOptions) {
    const merged = withDefaults(defaults, options);
    if (!(merged.leaseMs > 0)) throw new Error(`IdempotencyStore: leaseMs must be > 0, got ${merged.leaseMs}`);
    if (!(merged.retentionSeconds > 0)) throw new Error(`IdempotencyStore: retentionSeconds must be > 0, got ${merged.retentionSeconds}`);
    this.#documents = merged.documents;
    this.#table = merged.tableName;
    this.#retentionSeconds = merged.retentionSeconds;
    this.leaseMs = merged.leaseMs;
    this.#nowMs = merged.nowMs;
    this.#group = merged.groupCommits ? new GroupCommit(merged.documents) : undefined;
    if (!(merged.screenAboveDuplicateShare >= 0 && merged.screenAboveDuplicateShare <= 1)) {
      throw new Error(`IdempotencyStore: screenAboveDuplicateShare must be within 0..1, got ${merged.screenAboveDuplicateShare}`);
    }
    this.#screenAbove = merged.screenAboveDuplicateShare;
  }

  /**
   * Reads the idempotency records of a batch's jobs in one consistent `BatchGetItem` when recent
   * one-shot commits met duplicates often enough (`screenAboveDuplicateShare`); undefined when
   * they did not, or without group commits. Hand the result to {@link commitOnce}: a job whose
   * record would refuse it is answered from the record, and stays out of the group it would have
   * cancelled. Throws what the read threw: the commits then find their duplicates themselves.
   */
  async screen(jobs: readonly Pick<JobIdentity, 'idempotencyKey'>[]): Promise<ScreenedRecords | undefined> {
    if (!this.#group || jobs.length === 0 || this.#screenAbove >= 1 || this.#duplicates.share < this.#screenAbove) return undefined;
    return readRecords(this.#documents, this.#table, jobs.map((job) => job.idempotencyKey), this.#nowMs());
  }

  /**
   * For jobs whose effects are all DynamoDB writes: the COMPLETED record and the business writes
   * in one transaction. A crash can never apply the effect twice; a duplicate costs this one call.
   * With `groupCommits`, the commits started in the same turn share transactions, each answered
   * from its own items' cancellation reasons; `options.followers` says how many jobs wait for this
   * one (see {@link GroupCommitOptions}).
   */
  async commitOnce(job: JobIdentity, plan: CommitPlan, options: CommitOnceOptions = {}): Promise<Completion> {
    const screened = options.screened;
    const seen = screened?.records.get(job.idempotencyKey);
    if (screened && refusesNewRecord(seen, screened.readAtMs)) {
      annotate(trace.getActiveSpan(), () => ({ [ATTRIBUTES.commitScreened]: true }));
      return this.#counted(() => this.#existing(job, seen, screened.readAtMs));
    }
    const times = this.#times();
    const items = [completeNewRecordItem(this.#table, job, plan.result, times), ...businessItems(plan.writes)];
    const failure = await this.#transact(items, this.#group, options);
    if (!failure) return this.#counted(() => ({ kind: 'committed', result: plan.result ?? null }));
    const [record, ...business] = failure;
    if (isConditionFailure(record)) return this.#counted(() => this.#existing(job, oldItem(record) as unknown as IdempotencyRecord, times.nowMs));
    throw businessError(business, plan.writes) ?? transactionError(failure);
  }

  /** A one-shot commit's answer, counted toward the duplicate share (a refused key or a job in progress counts as met too). */
  #counted<T extends Completion>(answer: () => T): T {
    try {
      const completion = answer();
      this.#duplicates.add(completion.kind === 'duplicate');
      return completion;
    } catch (error) {
      this.#duplicates.add(true);
      throw error;
    }
  }

  /**
   * For jobs with an external side effect: IN_PROGRESS record + the lock of every resource the
   * job touches (`resources`, taken in key order so two jobs over the same set always agree) in
   * one transaction, before the side effect runs: either all are ours or none is.
   *
   * @param job.resources - @default [job.resourceId]
   */
  async claim(job: JobIdentity & { readonly resourceId: string; readonly resources?: readonly string[] }): Promise<ClaimOutcome> {
    const times = this.#times();
    const resourceIds = [...new Set([job.resourceId, ...(job.resources ?? [])])].sort();
    if (1 + resourceIds.length > MAX_TRANSACTION_ITEMS) {
      throw requestRejected(`job ${job.idempotencyKey} touches ${resourceIds.length} resources; a claim locks at most ${MAX_TRANSACTION_ITEMS - 1}`);
    }
    let fence = nextFence(times.nowMs);
    // At most one retry, and only when our clock is behind a last holder's fence.
    for (let attempt = 0; ; attempt += 1) {
      const claim: Claim = {
        idempotencyKey: job.idempotencyKey, resourceId: job.resourceId, resourceIds, ownerToken: randomUUID(), fence,
        leaseUntilMs: times.nowMs + this.leaseMs,
      };
      const failure = await this.#transact([
        claimRecordItem(this.#table, job, claim.ownerToken, claim.leaseUntilMs, times),
        ...holds(claim).map((hold) => acquireLockItem(this.#table, hold, claim.leaseUntilMs, times.nowMs)),
      ]);
      if (!failure) return { kind: 'claimed', claim };
      const [record, ...locks] = failure;
      if (isConditionFailure(record)) return this.#existing(job, oldItem(record) as unknown as IdempotencyRecord, times.nowMs);
      const refused = locks.flatMap((lock, index) => (isConditionFailure(lock) ? [{ id: resourceIds[index] as string, held: oldItem(lock) as unknown as LockItem }] : []));
      const live = refused.find(({ held }) => held.leaseUntilMs >= times.nowMs);
      if (refused.length > 0 && !live && attempt === 0) {
        fence = nextFence(times.nowMs, Math.max(...refused.map(({ held }) => held.fence)));
        continue;
      }
      const busy = live ?? refused[0];
      if (busy) {
        throw new LockBusyError(`resource ${busy.id} is locked until ${new Date(busy.held.leaseUntilMs).toISOString()}`, {
          context: { lockKey: lockKey(busy.id), leaseUntilMs: busy.held.leaseUntilMs, retryAfterMs: busy.held.leaseUntilMs - times.nowMs },
        });
      }
      throw transactionError(failure);
    }
  }

  /**
   * Business writes + COMPLETED + lock release, all conditioned on our owner token and fence. If
   * we stalled past our lease and someone took over, nothing is written and {@link FencedError}
   * (or, if the taker completed the job, a duplicate) is the answer. On any other failure the claim
   * is still ours: the caller gives it back with {@link abandon} (`runJob` does).
   */
  async commitClaimed(claim: Claim, plan: CommitPlan): Promise<Completion> {
    const times = this.#times();
    const locks = holds(claim);
    const failure = await this.#transact([
      completeClaimedRecordItem(this.#table, claim.idempotencyKey, claim.ownerToken, plan.result, times),
      ...locks.map((hold) => releaseLockItem(this.#table, hold)),
      ...businessItems(plan.writes),
    ]);
    if (!failure) return { kind: 'committed', result: plan.result ?? null };
    const [record, ...rest] = failure;
    const business = rest.slice(locks.length);
    if (isConditionFailure(record) || rest.slice(0, locks.length).some(isConditionFailure)) {
      const current = isConditionFailure(record) ? (oldItem(record) as unknown as IdempotencyRecord | undefined) : undefined;
      if (current?.status === STATUS.completed) return { kind: 'duplicate', result: current.result ?? null };
      throw new FencedError(`lease on ${claim.resourceId} (fence ${claim.fence}) was taken over; commit refused`, {
        context: { lockKey: lockKey(claim.resourceId), fence: claim.fence },
      });
    }
    throw businessError(business, plan.writes) ?? transactionError(failure);
  }

  /** Heartbeat: extends both the claim and the lock; {@link FencedError} if either is no longer ours. */
  async extend(claim: Claim): Promise<Claim> {
    const leaseUntilMs = this.#nowMs() + this.leaseMs;
    const failure = await this.#transact([
      extendClaimItem(this.#table, claim.idempotencyKey, claim.ownerToken, leaseUntilMs),
      ...holds(claim).map((hold) => extendLockItem(this.#table, hold, leaseUntilMs)),
    ]);
    if (!failure) return { ...claim, leaseUntilMs };
    if (failure.some(isConditionFailure)) {
      throw new FencedError(`lease on ${claim.resourceId} (fence ${claim.fence}) was lost before heartbeat`, {
        context: { lockKey: lockKey(claim.resourceId), fence: claim.fence },
      });
    }
    throw transactionError(failure);
  }

  /**
   * Gives the claim and lock back after a failed attempt; a claim that is no longer ours is left
   * alone. A cancellation for any other reason (a `TransactionConflict`, throttling) throws, so
   * the caller can try again rather than leave the claim IN_PROGRESS past its lease.
   */
  async abandon(claim: Claim): Promise<void> {
    const failure = await this.#transact([
      abandonClaimItem(this.#table, claim.idempotencyKey, claim.ownerToken), ...holds(claim).map((hold) => releaseLockItem(this.#table, hold)),
    ]);
    if (failure && !failure.some(isConditionFailure)) throw transactionError(failure);
  }

  #times() {
    return { nowMs: this.#nowMs(), retentionSeconds: this.#retentionSeconds };
  }

  /**
   * Runs a transaction (in a group commit, when given one); resolves undefined on success or with
   * the cancellation reasons of `items`.
   */
  async #transact(items: TransactItem[], group?: GroupCommit, options?: GroupCommitOptions): Promise<CancellationReason[] | undefined> {
    const failure = await (group ? group.transact(items, options) : transactWrite(this.#documents, items));
    // The claim's or commit's span says why DynamoDB refused it, item by item.
    if (failure) annotate(trace.getActiveSpan(), () => ({ [ATTRIBUTES.cancellationReasons]: failure.map((reason) => reason.Code ?? 'None') }));
    return failure;
  }

  /** Our write lost to an existing record: a completed duplicate, a live claim, or a reused key. */
  #existing(job: JobIdentity, record: IdempotencyRecord, nowMs: number): { kind: 'duplicate'; result: unknown } {
    const context = { idempotencyKey: job.idempotencyKey, existingJobId: record.jobId, existingStatus: record.status };
    if (record.payloadHash !== payloadHash(job)) {
      throw new IdempotencyKeyReusedError(
        `idempotency key '${job.idempotencyKey}' was already used by job ${record.jobId} for a different resource or payload`, { context },
      );
    }
    if (record.status === STATUS.completed) return { kind: 'duplicate', result: record.result ?? null };
    throw new JobInProgressError(`job with idempotency key '${job.idempotencyKey}' is in progress elsewhere`, {
      context: { ...context, retryAfterMs: (record.leaseUntilMs ?? nowMs) - nowMs },
    });
  }
}

/** One hold per locked resource: the claim's owner token and fence on each. */
function holds(claim: Claim): LeaseHold[] {
  return claim.resourceIds.map((resourceId) => ({ resourceId, ownerToken: claim.ownerToken, fence: claim.fence }));
}

function isConditionFailure(reason: CancellationReason | undefined): reason is CancellationReason {
  return reason?.Code === 'ConditionalCheckFailed';
}

function oldItem(reason: CancellationReason): Record<string, unknown> | undefined {
  return reason.Item ? unmarshall(reason.Item) : undefined;
}

function businessError(reasons: readonly (CancellationReason | undefined)[], writes: readonly BusinessWrite[]): BallastError | undefined {
  const index = reasons.findIndex(isConditionFailure);
  if (index < 0) return undefined;
  return writes[index]?.onConditionFailed(oldItem(reasons[index] as CancellationReason));
}

/**
 * Cancellations that are not condition failures. Contention (`TransactionConflict`) and throttling
 * are worth a retry; a `ValidationError` (an item over 400 KB, say) never succeeds and is fatal.
 * Any other code (`ItemCollectionSizeLimitExceeded`, say) is `transaction-cancelled`, with the codes
 * in its context: a held lock is a condition failure on the lock, answered before this, so calling
 * the rest `lock-busy` would send an operator after a lock that was never held; and it is not
 * `unexpected`, which the canary counts as a fault of the code being deployed.
 */
function transactionError(reasons: readonly CancellationReason[]): BallastError {
  const codes = reasons.map((reason) => reason.Code ?? 'None');
  const context = { cancellationCodes: codes };
  const invalid = reasons.find((reason) => reason.Code === 'ValidationError');
  if (invalid) return requestRejected(invalid.Message ?? 'ValidationError');
  const throttled = codes.some((code) => /Throttl|ProvisionedThroughput/.test(code));
  const reason = throttled ? REASONS.throttled : codes.includes('TransactionConflict') ? REASONS.transactionConflict : REASONS.transactionCancelled;
  return new TransientError(reason, `transaction cancelled: ${codes.join(', ')}`, { context });
}
