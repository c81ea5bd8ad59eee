import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { STATUS } from '../../shared/idempotency/record.ts';
import { JOB_TYPES } from '../../workloads/accounts/index.ts';
import { RESERVATION_STATUS, STOCK_JOBS } from '../../workloads/inventory/index.ts';
import type { DeadLetter } from '../../shared/operations/dlq-messages.ts';
import { listDeadLetters } from '../../shared/operations/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import type { ReconcileReport } from '../../shared/cache/index.ts';
import type { ChaosJob, ChaosWorkload } from './workload.ts';

/** Every promise the chaos run checks, as a count that must be 0. */
export const INVARIANTS = {
  lostJobs: 'lost jobs (valid, not applied, not dead-lettered)',
  ledgerMismatches: 'accounts whose balance or version differs from their completed jobs (double or missing effects, a half-applied transfer)',
  negativeStock: 'SKUs with negative available stock (an oversell)',
  stockMismatches: 'SKUs whose stock or version differs from their completed receipts, reservations and releases',
  reservationMismatches: 'reservations not created exactly once by a completed reserve, or in a state no completed job put them in',
  doubleShipments: 'carrier bookings performed twice for one key, for a key that never committed, or shipments not recorded once',
  doubleExternalEffects: 'external effects performed twice for one key, or for a key that never committed',
  poisonMisfiled: 'poison missing from the DLQ, without a reason or with the wrong one',
  unexpectedDeadLetters: 'valid jobs dead-lettered where the schedule did not make it so, left after replay',
  duplicateDeadLetters: 'source messages listed twice by the DLQ view',
  thrownInvocations: 'worker invocations that threw (one record took the batch down)',
  staleCacheEntries: 'cache entries that differ from the table after the invalidation lag',
  lostInvalidations: 'invalidation failures left unrepaired (failure queue and its DLQ)',
  orphanClaims: 'locks and IN_PROGRESS records past their lease',
} as const;
export type InvariantName = keyof typeof INVARIANTS;

export interface InvariantReport {
  readonly counts: Record<InvariantName, number>;
  /** The keys or ids involved, a few per invariant, for the violation report. */
  readonly examples: Partial<Record<InvariantName, readonly string[]>>;
}

export interface InvariantInputs {
  readonly workload: ChaosWorkload;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly outputs: Readonly<Record<string, string>>;
  /** Per Idempotency-Key, what the partner saw and did. */
  readonly partnerKeys: ReadonlyMap<string, { readonly calls: number; readonly effects: number }>;
  /** Keys the partner answered with a non-object (a `partner-rejected` they rightly earned). */
  readonly partnerRejected: ReadonlySet<string>;
  /** Per Idempotency-Key, what the carrier saw and did. */
  readonly carrierKeys: ReadonlyMap<string, { readonly calls: number; readonly effects: number }>;
  /** Keys the carrier answered with a non-object (a `carrier-rejected` they rightly earned). */
  readonly carrierRejected: ReadonlySet<string>;
  readonly thrownInvocations: number;
  /** Every cache entry compared with the table (`reconcile` with an unbounded sample, no repair). */
  readonly cache: ReconcileReport;
  readonly nowMs: number;
}

/** Reads everything back after quiescence and counts each violation. */
export async function checkInvariants(inputs: InvariantInputs): Promise<InvariantReport> {
  const { workload, outputs } = inputs;
  const [control, state, letters] = await Promise.all([
    scanAll(inputs.documents, outputs.ControlTableName as string),
    scanAll(inputs.documents, outputs.StateTableName as string),
    allDeadLetters(inputs.sqs, outputs),
  ]);
  const counts = Object.fromEntries(Object.keys(INVARIANTS).map((name) => [name, 0])) as Record<InvariantName, number>;
  const examples: Partial<Record<InvariantName, string[]>> = {};
  const violate = (name: InvariantName, example: string) => {
    counts[name] += 1;
    const list = (examples[name] ??= []);
    if (list.length < 10) list.push(example);
  };

  const completed = new Map(control.filter((item) => String(item.pk).startsWith('idem#') && item.status === STATUS.completed)
    .map((item) => [String(item.pk).slice('idem#'.length), item]));
  const lettersByKey = Map.groupBy(letters, (letter) => letter.idempotencyKey ?? '');

  // Valid jobs: applied, or dead-lettered with a reason their schedule allows.
  for (const job of workload.jobs.values()) {
    const dead = lettersByKey.get(job.idempotencyKey) ?? [];
    if (!completed.has(job.idempotencyKey) && dead.length === 0) violate('lostJobs', `${job.kind} ${job.idempotencyKey} on ${job.resourceId}`);
    for (const letter of dead) {
      if (!allowed(job, letter, inputs) && !completed.has(job.idempotencyKey)) {
        violate('unexpectedDeadLetters', `${job.kind} ${job.idempotencyKey}: ${letter.reason} (${letter.error.slice(0, 120)})`);
      }
    }
  }

  // The ledger: every account equals the sum of its completed jobs, each counted once.
  const expected = new Map<string, Tally>();
  const change = (accountId: string, delta: number) => tally(expected, accountId, delta);
  for (const record of completed.values()) {
    const result = (record.result ?? {}) as { accountId?: string; credited?: number; debited?: number; to?: string; transferred?: number };
    if (!result.accountId) continue;
    if (record.jobType === JOB_TYPES.transfer) {
      change(result.accountId, -(result.transferred ?? 0));
      change(result.to ?? '', result.transferred ?? 0);
    } else {
      change(result.accountId, (result.credited ?? 0) - (result.debited ?? 0));
    }
  }
  const accounts = new Map(state.filter((item) => String(item.pk).startsWith('account#')).map((item) => [String(item.accountId), item]));
  for (const accountId of new Set([...expected.keys(), ...accounts.keys()])) {
    const want = expected.get(accountId) ?? { amount: 0, version: 0 };
    const item = accounts.get(accountId);
    if (Number(item?.balance ?? 0) !== want.amount || Number(item?.version ?? 0) !== want.version) {
      violate('ledgerMismatches', `${accountId}: table balance ${String(item?.balance)} v${String(item?.version)}, jobs say ${want.amount} v${want.version}`);
    }
  }

  // The partner: one effect per key at most, and only for syncs that committed or were refused after it.
  for (const [key, seen] of inputs.partnerKeys) {
    if (seen.effects > 1) violate('doubleExternalEffects', `${key}: ${seen.effects} effects`);
    const job = workload.jobs.get(key);
    if (seen.effects > 0 && (!job || job.kind !== 'sync')) violate('doubleExternalEffects', `${key}: effect for a key that is not a sync`);
    if (seen.effects > 0 && job && !completed.has(key) && !(lettersByKey.get(key) ?? []).length) {
      violate('doubleExternalEffects', `${key}: effect performed, job neither committed nor dead-lettered`);
    }
  }
  for (const [key, record] of completed) {
    if (record.jobType === JOB_TYPES.syncProfile && (inputs.partnerKeys.get(key)?.effects ?? 0) !== 1) {
      violate('doubleExternalEffects', `${key}: committed sync with ${inputs.partnerKeys.get(key)?.effects ?? 0} partner effects`);
    }
  }

  checkInventory(completed, state, lettersByKey, inputs, violate);

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
  return { counts, examples };
}

/** What an item's completed jobs add up to: its amount (a balance, a stock) and its version (one per change). */
interface Tally {
  amount: number;
  version: number;
}

function tally(tallies: Map<string, Tally>, id: string, delta: number): void {
  const entry = tallies.get(id) ?? { amount: 0, version: 0 };
  entry.amount += delta;
  entry.version += 1;
  tallies.set(id, entry);
}

function allowed(job: ChaosJob, letter: DeadLetter, inputs: Pick<InvariantInputs, 'partnerRejected' | 'carrierRejected'>): boolean {
  if (job.allowedReasons.includes(letter.reason as never)) return true;
  if (letter.reason === 'partner-rejected') return inputs.partnerRejected.has(job.idempotencyKey);
  return letter.reason === 'carrier-rejected' && inputs.carrierRejected.has(job.idempotencyKey);
}

/**
 * The inventory workload's promises: stock never negative and equal to its completed receipts,
 * reservations and releases; each completed reservation created exactly once and in the state its
 * completed jobs put it; each carrier booking performed once per key and recorded once.
 */
function checkInventory(
  completed: ReadonlyMap<string, Record<string, unknown>>, state: readonly Record<string, unknown>[],
  lettersByKey: ReadonlyMap<string, readonly DeadLetter[]>, inputs: InvariantInputs, violate: (name: InvariantName, example: string) => void,
): void {
  const byPrefix = (prefix: string, id: string) => new Map(state.filter((item) => String(item.pk).startsWith(prefix)).map((item) => [String(item[id]), item]));
  const skus = byPrefix('sku#', 'skuId');
  const reservations = byPrefix('reservation#', 'reservationId');
  const shipments = byPrefix('shipment#', 'shipmentId');
  const stock = new Map<string, Tally>();
  const move = (skuId: string, delta: number) => tally(stock, skuId, delta);
  const wanted = new Map<string, { skuId: string; quantity: number; status: string; shipmentId?: string }>();
  for (const [key, record] of completed) {
    const result = (record.result ?? {}) as { skuId?: string; reservationId?: string; received?: number; reserved?: number; released?: number; shipmentId?: string; reservationIds?: string[] };
    if (record.jobType === STOCK_JOBS.receive) move(result.skuId ?? '', result.received ?? 0);
    if (record.jobType === STOCK_JOBS.reserve) {
      move(result.skuId ?? '', -(result.reserved ?? 0));
      wanted.set(result.reservationId ?? '', { skuId: result.skuId ?? '', quantity: result.reserved ?? 0, status: RESERVATION_STATUS.reserved });
    }
    if (record.jobType === STOCK_JOBS.release) move(result.skuId ?? '', result.released ?? 0);
    if (record.jobType === STOCK_JOBS.book && (inputs.carrierKeys.get(key)?.effects ?? 0) !== 1) {
      violate('doubleShipments', `${key}: committed booking with ${inputs.carrierKeys.get(key)?.effects ?? 0} carrier effects`);
    }
  }
  // The final state each completed release or shipment leaves its reservations in.
  for (const record of completed.values()) {
    const result = (record.result ?? {}) as { reservationId?: string; shipmentId?: string; reservationIds?: string[] };
    if (record.jobType === STOCK_JOBS.release) {
      const reservation = wanted.get(result.reservationId ?? '');
      if (reservation) reservation.status = RESERVATION_STATUS.released;
    }
    if (record.jobType === STOCK_JOBS.book) {
      if (!shipments.has(result.shipmentId ?? '')) violate('doubleShipments', `${result.shipmentId}: booked and committed, no shipment item`);
      for (const id of result.reservationIds ?? []) {
        const reservation = wanted.get(id);
        if (reservation) Object.assign(reservation, { status: RESERVATION_STATUS.shipped, shipmentId: result.shipmentId });
      }
    }
  }
  for (const [skuId, item] of skus) {
    if (Number(item.available) < 0) violate('negativeStock', `${skuId}: ${String(item.available)} available`);
  }
  for (const skuId of new Set([...stock.keys(), ...skus.keys()])) {
    const want = stock.get(skuId) ?? { amount: 0, version: 0 };
    const item = skus.get(skuId);
    if (Number(item?.available ?? 0) !== want.amount || Number(item?.version ?? 0) !== want.version) {
      violate('stockMismatches', `${skuId}: table ${String(item?.available)} v${String(item?.version)}, jobs say ${want.amount} v${want.version}`);
    }
  }
  for (const id of new Set([...wanted.keys(), ...reservations.keys()])) {
    const want = wanted.get(id);
    const item = reservations.get(id);
    if (!want || !item || item.skuId !== want.skuId || Number(item.quantity) !== want.quantity || item.status !== want.status || (want.shipmentId && item.shipmentId !== want.shipmentId)) {
      violate('reservationMismatches', `${id}: table ${item ? `${String(item.status)} ${String(item.quantity)} of ${String(item.skuId)}` : 'none'}, jobs say ${want ? `${want.status} ${want.quantity} of ${want.skuId}` : 'none'}`);
    }
  }
  for (const [key, seen] of inputs.carrierKeys) {
    if (seen.effects > 1) violate('doubleShipments', `${key}: ${seen.effects} carrier effects`);
    if (seen.effects > 0 && !completed.has(key) && !(lettersByKey.get(key) ?? []).length) {
      violate('doubleShipments', `${key}: carrier booking performed, job neither committed nor dead-lettered`);
    }
  }
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
