import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { REASONS, type Reason } from '../../shared/errors/index.ts';
import { ACCOUNT_REASONS, JOB_TYPES } from '../../workloads/accounts/index.ts';
import { poisonMessages, seededRandom, type PoisonMessage } from './poison.ts';

/** What a valid chaos job is, and so which dead-letter reasons its own schedule can give it. */
export const CHAOS_JOB_KINDS = {
  opening: 'opening-credit', credit: 'credit', debit: 'debit', versionedDebit: 'versioned-debit', sync: 'sync',
} as const;
export type ChaosJobKind = (typeof CHAOS_JOB_KINDS)[keyof typeof CHAOS_JOB_KINDS];

/** One intent (one idempotency key), however many messages carry it. */
export interface ChaosJob {
  readonly kind: ChaosJobKind;
  readonly idempotencyKey: string;
  readonly accountId: string;
  readonly body: string;
  /**
   * Dead-letter reasons the job's own content and order can earn it (a debit past the balance, a
   * stale expected version). Any other reason on a valid job is a violation unless the fault
   * schedule exhausted its receives, which a replay must then bring to exact.
   */
  readonly allowedReasons: readonly Reason[];
}

/** One message to send: a job's first copy, a copy of it, or poison. */
export type ChaosMessage =
  | { readonly role: 'job' | 'producer-duplicate' | 'redelivery'; readonly body: string; readonly job: ChaosJob }
  | { readonly role: 'poison'; readonly body: string; readonly poison: PoisonMessage };

export interface ChaosWorkloadOptions {
  readonly seed: number;
  /** Messages in the main phase (copies and poison included). */
  readonly jobs: number;
  /** @default 200 */
  readonly accounts?: number;
  /** Fraction of messages that are a producer's retry of an earlier job: new jobId, same key. @default 0.1 */
  readonly producerDuplicateRate?: number;
  /** Fraction that are an exact copy of an earlier message (SQS delivering twice). @default 0.03 */
  readonly redeliveryRate?: number;
  /** Fraction that are fuzzed poison. @default 0.01 */
  readonly poisonRate?: number;
}

export interface ChaosWorkload {
  readonly accountIds: readonly string[];
  /** Sent first, and applied before the main phase starts: every account exists. */
  readonly openings: readonly ChaosMessage[];
  readonly messages: readonly ChaosMessage[];
  /** Every valid intent, by idempotency key (openings included). */
  readonly jobs: ReadonlyMap<string, ChaosJob>;
  readonly poison: readonly PoisonMessage[];
}

/**
 * The chaos run's traffic, reproducible from its seed: credits, debits (some past the balance),
 * expected-version debits (mostly stale), profile syncs (external effects), all on the same
 * accounts with a skewed hot-account distribution (a few accounts take most of the traffic, so
 * locks, lanes and transactions contend), mixed with producer duplicates, exact redeliveries and
 * fuzzed poison.
 */
export function chaosWorkload(options: ChaosWorkloadOptions): ChaosWorkload {
  const random = seededRandom(options.seed);
  const accountCount = options.accounts ?? 200;
  const accountIds = Array.from({ length: accountCount }, (_, i) => `acc-${String(i).padStart(4, '0')}`);
  // Squaring a uniform draw puts half the traffic on the hottest ~25 % of accounts.
  const hotAccount = () => accountIds[Math.floor(random() ** 2 * accountCount)] as string;
  const jobs = new Map<string, ChaosJob>();
  let n = 0;
  const job = (kind: ChaosJobKind, type: string, accountId: string, payload: Record<string, unknown>, allowedReasons: readonly Reason[]): ChaosJob => {
    n += 1;
    const envelope: Envelope = createEnvelope({
      type, resourceId: accountId, payload, idempotencyKey: `chaos-${options.seed}-${n}`, jobId: `job-${options.seed}-${n}`,
      traceId: `trace-${options.seed}-${n}`, producerVersion: 'chaos-1.0.0', producedAt: new Date(Date.UTC(2026, 0, 1) + n),
    });
    const created = { kind, idempotencyKey: envelope.idempotencyKey, accountId, body: JSON.stringify(envelope), allowedReasons };
    jobs.set(created.idempotencyKey, created);
    return created;
  };

  const openings = accountIds.map((accountId): ChaosMessage => {
    const opening = job(CHAOS_JOB_KINDS.opening, JOB_TYPES.credit, accountId, { amount: 10_000 }, []);
    return { role: 'job', body: opening.body, job: opening };
  });

  const poisonCount = Math.round(options.jobs * (options.poisonRate ?? 0.01));
  const poison = poisonMessages({ seed: options.seed, count: poisonCount, resourceIds: accountIds });
  const poisonEvery = poisonCount > 0 ? options.jobs / poisonCount : Number.POSITIVE_INFINITY;
  const duplicateRate = options.producerDuplicateRate ?? 0.1;
  const redeliveryRate = options.redeliveryRate ?? 0.03;
  const messages: ChaosMessage[] = [];
  const sent: ChaosJob[] = [];
  let nextPoison = 0;
  for (let i = 0; i < options.jobs; i += 1) {
    if (nextPoison < poison.length && i >= nextPoison * poisonEvery) {
      const message = poison[nextPoison++] as PoisonMessage;
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
    const accountId = hotAccount();
    const mix = random();
    let created: ChaosJob;
    if (mix < 0.45) {
      created = job(CHAOS_JOB_KINDS.credit, JOB_TYPES.credit, accountId, { amount: 1 + Math.floor(random() * 1_000) }, []);
    } else if (mix < 0.72) {
      // One debit in ten asks for far more than any balance holds.
      const amount = random() < 0.1 ? 5_000_000 : 1 + Math.floor(random() * 1_500);
      created = job(CHAOS_JOB_KINDS.debit, JOB_TYPES.debit, accountId, { amount }, [ACCOUNT_REASONS.insufficientFunds]);
    } else if (mix < 0.8) {
      const expectedVersion = 1 + Math.floor(random() * 40);
      created = job(CHAOS_JOB_KINDS.versionedDebit, JOB_TYPES.debit, accountId, { amount: 1 + Math.floor(random() * 100), expectedVersion },
        [REASONS.staleVersion, ACCOUNT_REASONS.insufficientFunds]);
    } else {
      created = job(CHAOS_JOB_KINDS.sync, JOB_TYPES.syncProfile, accountId, { reason: 'chaos' }, []);
    }
    sent.push(created);
    messages.push({ role: 'job', body: created.body, job: created });
  }
  // Valid near-limit bodies from the fuzzer are jobs like any other.
  for (const message of poison) {
    if (!message.valid || !message.idempotencyKey) continue;
    const envelope = JSON.parse(message.body) as Envelope;
    const kind = envelope.type === JOB_TYPES.syncProfile ? CHAOS_JOB_KINDS.sync : CHAOS_JOB_KINDS.credit;
    jobs.set(message.idempotencyKey, { kind, idempotencyKey: message.idempotencyKey, accountId: envelope.resourceId, body: message.body, allowedReasons: [] });
  }
  return { accountIds, openings, messages, jobs, poison };
}
