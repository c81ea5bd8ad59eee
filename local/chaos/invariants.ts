import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { REASONS } from '../../shared/errors/index.ts';
import { STATUS } from '../../shared/idempotency/record.ts';
import { UNLABELLED_REASON, type DeadLetter } from '../../shared/operations/dlq-messages.ts';
import { listDeadLetters } from '../../shared/operations/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import type { ReconcileReport } from '../../shared/cache/index.ts';
import type { TraceQueryResult } from '../../shared/operations/trace-model.ts';
import { ATTRIBUTES, SPANS } from '../../shared/tracing/index.ts';
import type { ExternalApi } from '../external-api/index.ts';
import type { FenceReport } from '../faults/index.ts';
import type { ObservedRead } from './readers.ts';
import { findStaleReads, finishedInvalidations, type FinishedInvalidation } from './stale-reads.ts';
import type { ChaosJob, ChaosWorkload } from './workload.ts';

/** The run's own promises, for every workload; each workload adds its own (`WorkloadChaos.invariants`). */
export const INVARIANTS = {
  lostJobs: 'lost jobs (valid, not applied, not dead-lettered)',
  doubleExternalEffects: 'external effects performed twice for one key, or for a key that neither committed nor was dead-lettered',
  poisonMisfiled: 'poison missing from the DLQ, without a reason or with the wrong one',
  unexpectedDeadLetters: 'valid jobs dead-lettered where the schedule did not make it so, left after replay',
  duplicateDeadLetters: 'source messages listed twice by the DLQ view',
  thrownInvocations: 'worker invocations that threw (one record took the batch down)',
  staleCacheEntries: 'cache entries that differ from the table after the invalidation lag',
  lostInvalidations: 'invalidation failures left unrepaired (failure queue and its DLQ)',
  orphanClaims: 'locks and IN_PROGRESS records past their lease',
  untracedJobs: 'completed jobs whose trace shows no delivery under their producer\'s span (the trace context was lost on a hop)',
  doubleCommitsInTraces: 'idempotency keys whose traces show two commits that both committed',
  lockWaitDeadLetters: 'valid jobs dead-lettered because their resource stayed locked (waiting is not failing: they are requeued), before replay',
  misjudgedDeadLetters: 'valid jobs dead-lettered, before replay, for a reason neither the fault schedule nor their content gives them (a fatal verdict on a good job, an error the worker could not classify)',
  staleLockWrites: 'lock writes (a commit, an abandon, a heartbeat) that landed for a holder after a newer holder had taken its lock (the fence broken)',
  liveLockTakeovers: "locks taken while their holder's lease was still running, neither ended nor released (a lease that does not exclude)",
  staleReads: 'reads answered with an older version than one whose invalidation had finished before the read was sent (a stale value served)',
  keyReusesNotRefused: "messages reusing a committed job's idempotency key for another resource that are not in the DLQ as idempotency-key-reused, nor for a reason the fault schedule gives (applied, or dropped as duplicates)",
} as const;
export type InvariantName = keyof typeof INVARIANTS;
const TRACING_INVARIANTS: readonly InvariantName[] = ['untracedJobs', 'doubleCommitsInTraces'];
/** Invariants that read the DLQ as it was before the replay. */
const BEFORE_REPLAY_INVARIANTS: readonly InvariantName[] = ['lockWaitDeadLetters', 'misjudgedDeadLetters'];
/** Invariants that read what the DynamoDB fault proxy saw on the wire. */
const WIRE_INVARIANTS: readonly InvariantName[] = ['staleLockWrites', 'liveLockTakeovers'];
/** Invariants that hold the readers' answers to the invalidations the traces show finished. */
const READ_INVARIANTS: readonly InvariantName[] = ['staleReads'];
/**
 * Dead-letter reasons the fault schedule alone can give a valid job: transient failures that
 * outlasted its receives (a crashed holder's claim, a stalled lease taken over, throttling, an
 * outage, the deadline), and SQS's own redrive of a message whose invocations kept crashing.
 * Anything else on a valid job is a verdict its content did not earn.
 */
const SCHEDULE_REASONS: ReadonlySet<string> = new Set([
  REASONS.jobInProgress, REASONS.lockBusy, REASONS.fenced, REASONS.transactionConflict, REASONS.throttled, REASONS.dependencyUnavailable,
  REASONS.deadline, REASONS.groupBlocked, UNLABELLED_REASON,
]);

export interface InvariantReport {
  /** Every invariant checked (the run's, then each workload's), with what one violation is. */
  readonly descriptions: Readonly<Record<string, string>>;
  readonly counts: Record<string, number>;
  /** The keys or ids involved, a few per invariant, for the violation report. */
  readonly examples: Partial<Record<string, readonly string[]>>;
  /**
   * Commits the traces show answered from a batch's screened records, not by a transaction
   * (`ballast.commit.screened`): how much of the run went through screening, which the
   * invariants above then cover.
   */
  readonly screenedCommits: number;
  /** Records the traces show sent to their queue again because their last receive met a held lock. */
  readonly lockRequeues: number;
  /**
   * Lock writes of a holder whose lock a newer holder had taken, refused by their fence (the
   * fence watch's count): how often the run made a stalled holder try, which `staleLockWrites`
   * then covers. Undefined without the fence watch.
   */
  readonly fencedWrites?: number;
  /**
   * Readers' answers `staleReads` held to a finished invalidation of their item (sent after one):
   * without such reads it would hold trivially. Undefined when the readers' answers were not checked.
   */
  readonly readsChecked?: number;
  /** Cache entries `staleCacheEntries` compared with the table: on an empty cache it would hold trivially. */
  readonly cacheEntriesCompared: number;
  /** Key reuses in the DLQ as `idempotency-key-reused`. */
  readonly keyReusesRefused: number;
  /** Key reuses in the DLQ for a reason the fault schedule gives instead (their receives ran out first): not applied either. */
  readonly keyReusesExcused: number;
}

export interface InvariantInputs {
  readonly workload: ChaosWorkload;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly outputs: Readonly<Record<string, string>>;
  /** The workloads' API fakes, by setting: what each saw and did per Idempotency-Key. */
  readonly apis: ReadonlyMap<string, ExternalApi>;
  readonly thrownInvocations: number;
  /** Every cache entry compared with the table (`reconcile` with an unbounded sample, no repair). */
  readonly cache: ReconcileReport;
  readonly nowMs: number;
  /**
   * The local cloud's span store: every trace of a job id, trace id or idempotency key. Without it
   * (a rehearsal whose older version may predate tracing) the tracing invariants are not checked.
   */
  readonly traces?: (key: string) => TraceQueryResult;
  /**
   * The DLQ as it was before the replay of what the fault schedule put there (a replay that
   * succeeds would otherwise hide a wrong verdict). Without it (a rehearsal, whose older version
   * may predate the requeue of lock waits) `lockWaitDeadLetters` and `misjudgedDeadLetters` are not checked.
   */
  readonly lettersBeforeReplay?: readonly DeadLetter[];
  /** What the fence watch saw on the DynamoDB proxy. Without it (no proxy in front) `staleLockWrites` and `liveLockTakeovers` are not checked. */
  readonly fences?: FenceReport;
  /**
   * What the readers on the read API were answered during the run. Without them, or without the
   * traces (whose tombstone spans say when each invalidation finished), `staleReads` is not checked.
   */
  readonly reads?: readonly ObservedRead[];
}

/** The reasons the fakes' chaos rightly earned a job: `reason → keys` (a non-object answer to that key). */
export function rightlyRejected(workload: ChaosWorkload, apis: ReadonlyMap<string, ExternalApi>): Map<string, ReadonlySet<string>> {
  return new Map(workload.parts.flatMap((part) => Object.entries(part.chaos.rejections ?? {})
    .map(([reason, setting]): [string, ReadonlySet<string>] => [reason, apis.get(setting)?.rejectedKeys() ?? new Set()])));
}

/** Reads everything back after quiescence and counts each violation: the run's invariants, then each workload's. */
export async function checkInvariants(inputs: InvariantInputs): Promise<InvariantReport> {
  const { workload, outputs } = inputs;
  const [control, state, letters] = await Promise.all([
    scanAll(inputs.documents, outputs.ControlTableName as string),
    scanAll(inputs.documents, outputs.StateTableName as string),
    allDeadLetters(inputs.sqs, outputs),
  ]);
  const descriptions: Record<string, string> = { ...INVARIANTS };
  if (!inputs.traces) for (const name of TRACING_INVARIANTS) delete descriptions[name];
  if (!inputs.lettersBeforeReplay) for (const name of BEFORE_REPLAY_INVARIANTS) delete descriptions[name];
  if (!inputs.fences) for (const name of WIRE_INVARIANTS) delete descriptions[name];
  if (!inputs.reads || !inputs.traces) for (const name of READ_INVARIANTS) delete descriptions[name];
  // (a run without key reuses, such as a rehearsal, has nothing to check there)
  if (workload.keyReuses.length === 0) delete descriptions.keyReusesNotRefused;
  for (const part of workload.parts) {
    for (const [name, text] of Object.entries(part.chaos.invariants)) {
      if (name in descriptions) throw new Error(`chaos invariant ${name} of ${part.workload} is already another's: name it differently`);
      descriptions[name] = text;
    }
  }
  const counts = Object.fromEntries(Object.keys(descriptions).map((name) => [name, 0])) as Record<string, number>;
  const examples: Partial<Record<string, string[]>> = {};
  const violate = (name: string, example: string) => {
    counts[name] = (counts[name] ?? 0) + 1;
    const list = (examples[name] ??= []);
    if (list.length < 10) list.push(example);
  };

  const completed = new Map(control.filter((item) => String(item.pk).startsWith('idem#') && item.status === STATUS.completed)
    .map((item) => [String(item.pk).slice('idem#'.length), item]));
  // A key reuse's letter files under its original's key: it answers for itself (`keyReusesNotRefused`).
  const lettersByKey = Map.groupBy(letters.filter((letter) => !isKeyReuse(workload, letter)), (letter) => letter.idempotencyKey ?? '');
  const rejected = rightlyRejected(workload, inputs.apis);

  // Valid jobs: applied, or dead-lettered with a reason their schedule allows.
  for (const job of workload.jobs.values()) {
    const dead = lettersByKey.get(job.idempotencyKey) ?? [];
    if (!completed.has(job.idempotencyKey) && dead.length === 0) violate('lostJobs', `${job.kind} ${job.idempotencyKey} on ${job.resourceId}`);
    for (const letter of dead) {
      if (!allowed(job, letter, rejected) && !completed.has(job.idempotencyKey)) {
        violate('unexpectedDeadLetters', `${job.kind} ${job.idempotencyKey}: ${letter.reason} (${letter.error.slice(0, 120)})`);
      }
    }
  }

  // Every fake: one effect per key at most, and only for jobs that committed or were refused after it.
  for (const [setting, api] of inputs.apis) {
    for (const [key, seen] of api.keys()) {
      if (seen.effects > 1) violate('doubleExternalEffects', `${setting} ${key}: ${seen.effects} effects`);
      if (seen.effects > 0 && !completed.has(key) && !(lettersByKey.get(key) ?? []).length) {
        violate('doubleExternalEffects', `${setting} ${key}: effect performed, job neither committed nor dead-lettered`);
      }
    }
  }

  for (const part of workload.parts) {
    part.chaos.check({ completed, state, lettersByKey, jobs: workload.jobs, apis: inputs.apis, violate });
  }

  for (const letter of inputs.lettersBeforeReplay ?? []) {
    const job = workload.jobs.get(letter.idempotencyKey ?? '');
    if (!job || isKeyReuse(workload, letter)) continue;
    // A job that only waited for a lock goes back to its queue, not to the DLQ (`requeuedMessage`).
    if (letter.reason === REASONS.lockBusy) violate('lockWaitDeadLetters', `${letter.idempotencyKey}: ${letter.error.slice(0, 120)}`);
    if (!SCHEDULE_REASONS.has(letter.reason) && !allowed(job, letter, rejected)) {
      violate('misjudgedDeadLetters', `${job.kind} ${job.idempotencyKey}: ${letter.reason} (${letter.error.slice(0, 120)})`);
    }
  }

  for (const write of inputs.fences?.staleWritesApplied ?? []) violate('staleLockWrites', write);
  for (const takeover of inputs.fences?.liveTakeovers ?? []) violate('liveLockTakeovers', takeover);

  // Key reuses: each in the DLQ, refused for its key; or, where the fault schedule ran out its
  // receives first, for that (it was never applied either way: the workloads' state checks see an
  // applied one as the other resource's extra effect).
  const reuseLetters = Map.groupBy(letters.filter((letter) => isKeyReuse(workload, letter)), (letter) => letter.envelope?.jobId ?? '');
  let keyReusesRefused = 0;
  let keyReusesExcused = 0;
  for (const reuse of workload.keyReuses) {
    const found = reuseLetters.get(reuse.jobId) ?? [];
    if (found.some((letter) => letter.reason === REASONS.idempotencyKeyReused)) keyReusesRefused += 1;
    else if (found.some((letter) => SCHEDULE_REASONS.has(letter.reason))) keyReusesExcused += 1;
    else {
      violate('keyReusesNotRefused', `${reuse.original.idempotencyKey} reused on ${reuse.resourceId} (job ${reuse.jobId}): DLQ has ${found.map((l) => l.reason).join(', ') || 'nothing'}`);
    }
  }

  let screenedCommits = 0;
  let lockRequeues = 0;
  const invalidations: FinishedInvalidation[] = [];
  // The traces tell the same story: each completed key was delivered under its producer's span
  // (the context survived the queue, redeliveries and replays), and committed once.
  for (const key of inputs.traces ? completed.keys() : []) {
    const spans = inputs.traces?.(key).traces.flatMap((trace) => trace.spans) ?? [];
    const produced = new Set(spans.filter((span) => span.name === SPANS.produce).map((span) => span.spanId));
    if (!spans.some((span) => span.name === SPANS.record && produced.has(span.parentSpanId ?? ''))) {
      violate('untracedJobs', `${key}: ${produced.size} produce span(s), ${spans.filter((span) => span.name === SPANS.record).length} delivery span(s), none under them`);
    }
    const commits = spans.filter((span) => span.name === SPANS.commit && span.attributes[ATTRIBUTES.outcome] === 'committed');
    if (commits.length > 1) violate('doubleCommitsInTraces', `${key}: ${commits.length} commits committed`);
    screenedCommits += spans.filter((span) => span.name === SPANS.commit && span.attributes[ATTRIBUTES.commitScreened] === true).length;
    lockRequeues += spans.filter((span) => span.name === SPANS.lockWait && span.attributes[ATTRIBUTES.lockRequeued] === true).length;
    // (a commit's stream record and tombstone are in the committing job's trace)
    invalidations.push(...finishedInvalidations(spans));
  }
  const reads = inputs.reads && inputs.traces ? findStaleReads(inputs.reads, invalidations) : undefined;
  for (const stale of reads?.stale ?? []) violate('staleReads', stale);

  // Poison: every one in the DLQ, once, with the reason it must carry.
  const lettersByBody = Map.groupBy(letters, (letter) => letter.body);
  for (const poison of workload.poison) {
    if (poison.valid) continue;
    const found = lettersByBody.get(poison.body) ?? [];
    if (found.length !== 1 || found[0]?.reason !== poison.expectedReason) {
      violate('poisonMisfiled', `${poison.kind}/${poison.variant}: expected ${poison.expectedReason}, DLQ has ${found.map((l) => l.reason).join(', ') || 'nothing'}`);
    }
    if (poison.idempotencyKey && completed.has(poison.idempotencyKey)) violate('poisonMisfiled', `${poison.kind}/${poison.variant}: was applied`);
  }

  // Copies of one source message are expected (a crash after the DLQ send); the view must show each source once.
  for (const [source, entries] of Map.groupBy(letters, (letter) => letter.sourceMessageId)) {
    if (entries.length > 1) violate('duplicateDeadLetters', `${source}: listed ${entries.length} times`);
  }
  if (inputs.thrownInvocations > 0) {
    counts.thrownInvocations = inputs.thrownInvocations;
    examples.thrownInvocations = ['see the worker log for the error'];
  }
  for (const mismatch of inputs.cache.details) {
    violate('staleCacheEntries', `${mismatch.entity} ${mismatch.id}: cached v${String(mismatch.cachedVersion)}, table v${String(mismatch.tableVersion)}`);
  }
  for (const name of ['InvalidatorFailureQueueUrl', 'InvalidatorFailureDeadLetterQueueUrl']) {
    const url = outputs[name];
    if (!url) continue;
    const depth = await queueCounts(inputs.sqs, url);
    for (let i = 0; i < depth.visible + depth.inFlight + depth.delayed; i += 1) violate('lostInvalidations', `${name}: message ${i + 1}`);
  }
  for (const item of control) {
    const leaseUntilMs = Number(item.leaseUntilMs ?? 0);
    const held = String(item.pk).startsWith('lock#') ? item.ownerToken !== undefined : item.status === STATUS.inProgress;
    if (held && leaseUntilMs < inputs.nowMs) {
      const key = String(item.pk).replace(/^idem#/, '');
      const dead = (lettersByKey.get(key) ?? []).map((letter) => `${letter.reason}×${letter.copies}`).join(', ') || 'none';
      violate('orphanClaims', `${String(item.pk)} lease ended ${new Date(leaseUntilMs).toISOString()} (dead letters: ${dead})`);
    }
  }
  return {
    descriptions, counts, examples, screenedCommits, lockRequeues, fencedWrites: inputs.fences?.staleWritesRefused, readsChecked: reads?.checked, cacheEntriesCompared: inputs.cache.sampled, keyReusesRefused, keyReusesExcused,
  };
}

/** Whether a dead letter is one of the run's key reuses (by its envelope's job id), not its original. */
export function isKeyReuse(workload: ChaosWorkload, letter: DeadLetter): boolean {
  const jobId = letter.envelope?.jobId;
  return jobId !== undefined && workload.keyReuses.some((reuse) => reuse.jobId === jobId);
}

function allowed(job: ChaosJob, letter: DeadLetter, rejected: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  return job.allowedReasons.includes(letter.reason as never) || (rejected.get(letter.reason)?.has(job.idempotencyKey) ?? false);
}

/** Every item of a table (strongly consistent pages). */
export async function scanAll(documents: DynamoDBDocumentClient, tableName: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  for (let page = 0; page < 100_000; page += 1) {
    const out = await documents.send(new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
    if (!start) break;
  }
  return items;
}

/** The DLQ as `ballast dlq list` shows it: one entry per source message. */
export async function allDeadLetters(sqs: SQSClient, outputs: Readonly<Record<string, string>>): Promise<readonly DeadLetter[]> {
  const listing = await listDeadLetters({
    sqs, deadLetterQueueUrl: outputs.JobsDeadLetterQueueUrl as string, defaultSourceQueueUrl: outputs.JobsQueueUrl as string,
  }, {}, 100_000);
  return listing.messages;
}
