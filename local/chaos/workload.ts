import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { REASONS, type Reason } from '../../shared/errors/index.ts';
import { ACCOUNT_REASONS, JOB_TYPES } from '../../workloads/accounts/index.ts';
import { INVENTORY_REASONS, STOCK_JOBS } from '../../workloads/inventory/index.ts';
import { poisonMessages, seededRandom, type PoisonMessage } from './poison.ts';

/** What a valid chaos job is, and so which dead-letter reasons its own schedule can give it. */
export const CHAOS_JOB_KINDS = {
  opening: 'opening-credit', credit: 'credit', debit: 'debit', versionedDebit: 'versioned-debit', sync: 'sync', transfer: 'transfer',
  openingStock: 'opening-stock', receive: 'receive', reserve: 'reserve', release: 'release', ship: 'ship',
} as const;
export type ChaosJobKind = (typeof CHAOS_JOB_KINDS)[keyof typeof CHAOS_JOB_KINDS];

/** One intent (one idempotency key), however many messages carry it. */
export interface ChaosJob {
  readonly kind: ChaosJobKind;
  readonly idempotencyKey: string;
  /** The account, SKU or shipment the job names (its envelope's `resourceId`). */
  readonly resourceId: string;
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
  /** @default 50 */
  readonly skus?: number;
  /** Fraction of messages that are a producer's retry of an earlier job: new jobId, same key. @default 0.1 */
  readonly producerDuplicateRate?: number;
  /** Fraction that are an exact copy of an earlier message (SQS delivering twice). @default 0.03 */
  readonly redeliveryRate?: number;
  /** Fraction that are fuzzed poison. @default 0.01 */
  readonly poisonRate?: number;
}

export interface ChaosWorkload {
  readonly accountIds: readonly string[];
  readonly skuIds: readonly string[];
  /** Sent first, and applied before the main phase starts: every account and SKU exists. */
  readonly openings: readonly ChaosMessage[];
  readonly messages: readonly ChaosMessage[];
  /** Every valid intent, by idempotency key (openings included). */
  readonly jobs: ReadonlyMap<string, ChaosJob>;
  readonly poison: readonly PoisonMessage[];
}

/**
 * The chaos run's traffic, reproducible from its seed, of both shipped workloads: credits, debits
 * (some past the balance), expected-version debits (mostly stale), transfers between two accounts,
 * profile syncs (external effects); stock receipts, reservations (some past the stock), releases
 * and carrier shipments of several reservations (external, under several locks) — all on shared
 * accounts and SKUs with a skewed hot distribution (a few take most of the traffic, so locks,
 * lanes and transactions contend), mixed with producer duplicates, exact redeliveries and fuzzed
 * poison. A reservation is released or shipped, never both.
 */
export function chaosWorkload(options: ChaosWorkloadOptions): ChaosWorkload {
  const random = seededRandom(options.seed);
  const accountCount = options.accounts ?? 200;
  const accountIds = Array.from({ length: accountCount }, (_, i) => `acc-${String(i).padStart(4, '0')}`);
  // Squaring a uniform draw puts half the traffic on the hottest ~25 % of accounts.
  const hotAccount = () => accountIds[Math.floor(random() ** 2 * accountCount)] as string;
  const skuCount = options.skus ?? 50;
  const skuIds = Array.from({ length: skuCount }, (_, i) => `sku-${String(i).padStart(4, '0')}`);
  const hotSku = () => skuIds[Math.floor(random() ** 2 * skuCount)] as string;
  /** Reservations sent and not yet released or shipped by a later job. */
  const open: { readonly reservationId: string; readonly skuId: string }[] = [];
  const takeOpen = () => open.splice(Math.floor(random() * open.length), 1)[0] as (typeof open)[number];
  const jobs = new Map<string, ChaosJob>();
  let n = 0;
  const job = (kind: ChaosJobKind, type: string, resourceId: string, payload: Record<string, unknown>, allowedReasons: readonly Reason[]): ChaosJob => {
    n += 1;
    const envelope: Envelope = createEnvelope({
      type, resourceId, payload, idempotencyKey: `chaos-${options.seed}-${n}`, jobId: `job-${options.seed}-${n}`,
      traceId: `trace-${options.seed}-${n}`, producerVersion: 'chaos-1.0.0', producedAt: new Date(Date.UTC(2026, 0, 1) + n),
    });
    const created = { kind, idempotencyKey: envelope.idempotencyKey, resourceId, body: JSON.stringify(envelope), allowedReasons };
    jobs.set(created.idempotencyKey, created);
    return created;
  };

  const openings = [
    ...accountIds.map((accountId) => job(CHAOS_JOB_KINDS.opening, JOB_TYPES.credit, accountId, { amount: 10_000 }, [])),
    ...skuIds.map((skuId) => job(CHAOS_JOB_KINDS.openingStock, STOCK_JOBS.receive, skuId, { quantity: 200 }, [])),
  ].map((opening): ChaosMessage => ({ role: 'job', body: opening.body, job: opening }));

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
    // Not found: a release or shipment may be delivered before the reservation it names (or that reservation was an oversell).
    const notFound = [INVENTORY_REASONS.reservationNotFound];
    let created: ChaosJob;
    if (mix < 0.3) {
      created = job(CHAOS_JOB_KINDS.credit, JOB_TYPES.credit, accountId, { amount: 1 + Math.floor(random() * 1_000) }, []);
    } else if (mix < 0.46) {
      // One debit in ten asks for far more than any balance holds.
      const amount = random() < 0.1 ? 5_000_000 : 1 + Math.floor(random() * 1_500);
      created = job(CHAOS_JOB_KINDS.debit, JOB_TYPES.debit, accountId, { amount }, [ACCOUNT_REASONS.insufficientFunds]);
    } else if (mix < 0.51) {
      const expectedVersion = 1 + Math.floor(random() * 40);
      created = job(CHAOS_JOB_KINDS.versionedDebit, JOB_TYPES.debit, accountId, { amount: 1 + Math.floor(random() * 100), expectedVersion },
        [REASONS.staleVersion, ACCOUNT_REASONS.insufficientFunds]);
    } else if (mix < 0.58) {
      created = job(CHAOS_JOB_KINDS.sync, JOB_TYPES.syncProfile, accountId, { reason: 'chaos' }, []);
    } else if (mix < 0.66) {
      let to = hotAccount();
      if (to === accountId) to = accountIds[(accountIds.indexOf(accountId) + 1) % accountCount] as string;
      const amount = random() < 0.1 ? 5_000_000 : 1 + Math.floor(random() * 1_500);
      created = job(CHAOS_JOB_KINDS.transfer, JOB_TYPES.transfer, accountId, { to, amount }, [ACCOUNT_REASONS.insufficientFunds]);
    } else if (mix < 0.7) {
      created = job(CHAOS_JOB_KINDS.receive, STOCK_JOBS.receive, hotSku(), { quantity: 1 + Math.floor(random() * 100) }, []);
    } else if (mix < 0.82 || open.length === 0) {
      // One reservation in ten asks for more than any SKU holds: an oversell.
      const reservationId = `res-${options.seed}-${n + 1}`;
      const quantity = random() < 0.1 ? 100_000 : 1 + Math.floor(random() * 30);
      const skuId = hotSku();
      created = job(CHAOS_JOB_KINDS.reserve, STOCK_JOBS.reserve, skuId, { reservationId, quantity }, [INVENTORY_REASONS.insufficientStock]);
      open.push({ reservationId, skuId });
    } else if (mix < 0.9) {
      const { reservationId, skuId } = takeOpen();
      created = job(CHAOS_JOB_KINDS.release, STOCK_JOBS.release, skuId, { reservationId }, notFound);
    } else {
      const reservationIds = Array.from({ length: Math.min(open.length, 1 + Math.floor(random() * 3)) }, () => takeOpen().reservationId);
      created = job(CHAOS_JOB_KINDS.ship, STOCK_JOBS.book, `ship-${options.seed}-${n + 1}`, { reservationIds }, notFound);
    }
    sent.push(created);
    messages.push({ role: 'job', body: created.body, job: created });
  }
  // Valid near-limit bodies from the fuzzer are jobs like any other.
  for (const message of poison) {
    if (!message.valid || !message.idempotencyKey) continue;
    const envelope = JSON.parse(message.body) as Envelope;
    const kind = envelope.type === JOB_TYPES.syncProfile ? CHAOS_JOB_KINDS.sync : CHAOS_JOB_KINDS.credit;
    jobs.set(message.idempotencyKey, { kind, idempotencyKey: message.idempotencyKey, resourceId: envelope.resourceId, body: message.body, allowedReasons: [] });
  }
  return { accountIds, skuIds, openings, messages, jobs, poison };
}
