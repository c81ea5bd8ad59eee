import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import type { Workload } from '../../shared/workloads/index.ts';
import { workloadLocal } from '../workload-local.ts';
import { seededRandom } from './random.ts';
import type { ChaosConvoy, ChaosJob, ChaosPoison, WorkloadChaos } from './workload-chaos.ts';

export type { ChaosConvoy, ChaosJob, ChaosPoison } from './workload-chaos.ts';

/** One message to send: a job's first copy, a copy of it, poison, or a completed job's key reused. */
export type ChaosMessage =
  | { readonly role: 'job' | 'producer-duplicate' | 'redelivery'; readonly body: string; readonly job: ChaosJob }
  | { readonly role: 'poison'; readonly body: string; readonly poison: ChaosPoison }
  | { readonly role: 'key-reuse'; readonly body: string; readonly reuse: ChaosKeyReuse };

/**
 * A producer bug: an opening's idempotency key (committed before the main phase starts) sent again
 * for another resource of the same kind, as a key derived from the wrong field would. The worker
 * owes it the DLQ with `idempotency-key-reused`: neither applied (the other resource would gain the
 * opening's effect) nor taken for a duplicate and dropped.
 */
export interface ChaosKeyReuse {
  /** The reusing message's own job id: how its dead letter is told from its original's. */
  readonly jobId: string;
  readonly original: ChaosJob;
  readonly resourceId: string;
  readonly body: string;
}

export interface ChaosWorkloadOptions {
  readonly seed: number;
  /** Messages in the main phase (copies and poison included; the workloads' convoys come on top). */
  readonly jobs: number;
  /** Fraction of messages that are a producer's retry of an earlier job: new jobId, same key. @default 0.1 */
  readonly producerDuplicateRate?: number;
  /** Fraction that are an exact copy of an earlier message (SQS delivering twice). @default 0.03 */
  readonly redeliveryRate?: number;
  /** Fraction that are fuzzed poison. @default 0.01 */
  readonly poisonRate?: number;
  /** Whether the workloads' convoys ({@link WorkloadChaos}'s `convoy`) take part. @default false */
  readonly convoys?: boolean;
  /**
   * Fraction of the main phase's messages that reuse an opening's key for another resource
   * ({@link ChaosKeyReuse}); at least one when above 0, and at most one per opening. @default 0
   */
  readonly keyReuseRate?: number;
}

/** A workload's part in the run: its checks and its traffic. */
export interface ChaosPart {
  readonly workload: string;
  readonly chaos: WorkloadChaos;
}

export interface ChaosWorkload {
  /** The workloads taking part (those whose local part declares `chaos`). */
  readonly parts: readonly ChaosPart[];
  /** Sent first, and applied before the main phase starts: everything the jobs act on exists. */
  readonly openings: readonly ChaosMessage[];
  readonly messages: readonly ChaosMessage[];
  /** Every valid intent, by idempotency key (openings included). */
  readonly jobs: ReadonlyMap<string, ChaosJob>;
  readonly poison: readonly ChaosPoison[];
  /** The workloads' convoys: their jobs are not among `messages` (the run sends them on their own). */
  readonly convoys: readonly ChaosConvoy[];
  /** The key reuses among `messages`. */
  readonly keyReuses: readonly ChaosKeyReuse[];
  /** Read API paths for the readers, hottest first within each workload. */
  readonly reads: readonly (readonly string[])[];
  readonly sizes: Readonly<Record<string, number>>;
}

/**
 * The chaos run's traffic, reproducible from its seed: every registered workload's jobs (from
 * its `local.chaos`, in proportion to its weight), mixed with producer duplicates, exact
 * redeliveries and the workloads' fuzzed poison.
 */
export async function chaosWorkload(workloads: readonly Workload[], options: ChaosWorkloadOptions): Promise<ChaosWorkload> {
  const random = seededRandom(options.seed);
  const parts = (await Promise.all(workloads.map(async (workload) => ({ workload: workload.name, chaos: (await workloadLocal(workload)).chaos }))))
    .filter((part): part is ChaosPart => part.chaos !== undefined);
  if (parts.length === 0) throw new Error('no registered workload declares chaos traffic (local.chaos in workloads/<name>/local/index.ts)');
  const jobs = new Map<string, ChaosJob>();
  let n = 0;
  const job = (kind: string, type: string, resourceId: string, payload: Record<string, unknown>, allowedReasons: ChaosJob['allowedReasons']): ChaosJob => {
    n += 1;
    const envelope: Envelope = createEnvelope({
      type, resourceId, payload, idempotencyKey: `chaos-${options.seed}-${n}`, jobId: `job-${options.seed}-${n}`,
      traceId: `trace-${options.seed}-${n}`, producerVersion: 'chaos-1.0.0', producedAt: new Date(Date.UTC(2026, 0, 1) + n),
    });
    const created = { kind, idempotencyKey: envelope.idempotencyKey, resourceId, body: JSON.stringify(envelope), allowedReasons };
    jobs.set(created.idempotencyKey, created);
    return created;
  };
  const traffic = parts.map((part) => part.chaos.traffic({ seed: options.seed, random, jobs: options.jobs, job }));
  const openings = traffic.flatMap((share) => share.openings).map((opening): ChaosMessage => ({ role: 'job', body: opening.body, job: opening }));

  const poisonCount = Math.round(options.jobs * (options.poisonRate ?? 0.01));
  const poisoners = traffic.filter((share) => share.poison);
  const poison = poisoners.flatMap((share, i) =>
    share.poison?.(Math.floor(poisonCount / poisoners.length) + (i < poisonCount % poisoners.length ? 1 : 0)) ?? []);
  const poisonEvery = poison.length > 0 ? options.jobs / poison.length : Number.POSITIVE_INFINITY;
  const weights = parts.map((part) => part.chaos.weight ?? 1);
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  const pickShare = () => {
    let roll = random() * totalWeight;
    for (const [index, weight] of weights.entries()) if ((roll -= weight) < 0) return traffic[index] as (typeof traffic)[number];
    return traffic[traffic.length - 1] as (typeof traffic)[number];
  };
  const duplicateRate = options.producerDuplicateRate ?? 0.1;
  const redeliveryRate = options.redeliveryRate ?? 0.03;
  const messages: ChaosMessage[] = [];
  const sent: ChaosJob[] = [];
  let nextPoison = 0;
  for (let i = 0; i < options.jobs; i += 1) {
    if (nextPoison < poison.length && i >= nextPoison * poisonEvery) {
      const message = poison[nextPoison++] as ChaosPoison;
      messages.push({ role: 'poison', body: message.body, poison: message });
      continue;
    }
    const roll = random();
    const earlier = sent.length > 0 ? sent[Math.floor(random() * sent.length)] : undefined;
    if (earlier && roll < duplicateRate) {
      // A producer retry: same intent and key, a new envelope (jobId, trace, time) around it.
      const original = JSON.parse(earlier.body) as Envelope;
      const retry = { ...original, jobId: `${original.jobId}-retry-${i}`, traceId: `${original.traceId}-retry`, producedAt: new Date(Date.parse(original.producedAt) + 1).toISOString() };
      messages.push({ role: 'producer-duplicate', body: JSON.stringify(retry), job: earlier });
      continue;
    }
    if (earlier && roll < duplicateRate + redeliveryRate) {
      messages.push({ role: 'redelivery', body: earlier.body, job: earlier });
      continue;
    }
    const created = pickShare().next();
    sent.push(created);
    messages.push({ role: 'job', body: created.body, job: created });
  }
  const keyReuses = reuseKeys(traffic.flatMap((share) => share.openings), options.jobs, options.keyReuseRate ?? 0, random);
  for (const reuse of keyReuses) messages.splice(Math.floor(random() * (messages.length + 1)), 0, { role: 'key-reuse', body: reuse.body, reuse });
  const convoys = options.convoys ? traffic.flatMap((share) => (share.convoy ? [share.convoy()] : [])) : [];
  // Valid near-limit bodies from the fuzzer are jobs like any other.
  for (const message of poison) {
    if (!message.valid || !message.idempotencyKey) continue;
    const envelope = JSON.parse(message.body) as Envelope;
    jobs.set(message.idempotencyKey, {
      kind: message.jobKind ?? 'poison', idempotencyKey: message.idempotencyKey, resourceId: envelope.resourceId, body: message.body, allowedReasons: [],
    });
  }
  return {
    parts, openings, messages, jobs, poison, convoys, keyReuses,
    reads: traffic.map((share) => share.reads),
    sizes: Object.assign({}, ...traffic.map((share) => share.sizes)) as Record<string, number>,
  };
}

/**
 * Key reuses of `openings`: each a seeded opening's envelope with a new job id and another
 * opening's resource of the same job type (so the job itself would apply there), its key kept.
 */
function reuseKeys(openings: readonly ChaosJob[], jobs: number, rate: number, random: () => number): ChaosKeyReuse[] {
  if (rate <= 0) return [];
  const byType = Map.groupBy(openings, (opening) => (JSON.parse(opening.body) as Envelope).type);
  const candidates = [...byType.values()].filter((group) => group.length > 1).flat();
  const count = Math.min(candidates.length, Math.max(1, Math.round(jobs * rate)));
  const pool = [...candidates];
  return Array.from({ length: count }, (_, i) => {
    const original = pool.splice(Math.floor(random() * pool.length), 1)[0] as ChaosJob;
    const envelope = JSON.parse(original.body) as Envelope;
    const others = (byType.get(envelope.type) ?? []).filter((opening) => opening.resourceId !== original.resourceId);
    const resourceId = (others[Math.floor(random() * others.length)] as ChaosJob).resourceId;
    const jobId = `${envelope.jobId}-reused-${i}`;
    const body = JSON.stringify({ ...envelope, jobId, traceId: `${envelope.traceId}-reused`, resourceId });
    return { jobId, original, resourceId, body };
  });
}
