import { createEnvelope } from '../../shared/envelope/index.ts';
import { workloadLocal, type WorkloadLocal } from '../workload-local.ts';
import type { Workload } from '../../shared/workloads/index.ts';

/** One demo message, with what it is so the summary can account for every one. */
export interface DemoMessage {
  /** The job's kind in its workload's words (e.g. `make`), or the framework's (`duplicate`, `malformed`, `incompatible`). */
  readonly kind: string;
  readonly body: string;
}

/** A workload's share of the demo, from its `local.demo`. */
export interface DemoTraffic {
  /** Sent first: what the other messages need to exist (the items the rest of its jobs act on). */
  readonly openings: readonly DemoMessage[];
  readonly messages: readonly DemoMessage[];
  /** Read API paths the demo's readers poll, e.g. `accounts/acc-001`. */
  readonly reads: readonly string[];
}

/** What a workload's demo is given: how many messages it should make, the demo's seeded randomness, and a message builder. */
export interface DemoRequest {
  readonly jobs: number;
  readonly random: () => number;
  /** A demo message of a job (its own idempotency key, the demo's producer version). */
  message(kind: string, type: string, resourceId: string, payload: Record<string, unknown>): DemoMessage;
}

export interface DemoWorkloadOptions {
  /** @default 3000 */
  readonly jobs?: number;
  /** @default 42 */
  readonly seed?: number;
}

/** Every workload's demo traffic merged, plus the framework's own: duplicates, malformed bodies, one incompatible envelope. */
export interface DemoWorkload {
  readonly messages: readonly DemoMessage[];
  readonly reads: readonly string[];
}

/**
 * A reproducible demo over every registered workload that has a `local.demo`: their openings
 * first, then their messages interleaved, with exact duplicates of earlier messages (≈ 8 %), a few
 * malformed bodies and one envelope of an unknown major version — everything the worker must get
 * right, in one stream.
 */
export async function demoWorkload(workloads: readonly Workload[], options: DemoWorkloadOptions = {}): Promise<DemoWorkload> {
  const total = options.jobs ?? 3000;
  let state = options.seed ?? 42;
  const random = () => ((state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const demos = (await Promise.all(workloads.map(workloadLocal))).flatMap((local: WorkloadLocal) => (local.demo ? [local.demo] : []));
  // The framework's share: about 8.5 % duplicates and malformed bodies, and one incompatible envelope.
  const own = Math.ceil(total * 0.09);
  let keys = 0;
  const message: DemoRequest['message'] = (kind, type, resourceId, payload) => ({
    kind, body: JSON.stringify(createEnvelope({ type, resourceId, payload, producerVersion: 'demo-1.0.0', idempotencyKey: `demo-${(keys += 1)}` })),
  });
  const jobs = Math.max(1, Math.floor((total - own) / Math.max(1, demos.length)));
  const traffic = demos.map((demo) => demo({ jobs, random, message }));
  const messages: DemoMessage[] = traffic.flatMap((share) => share.openings);
  const queues = traffic.map((share) => [...share.messages]);
  const sent: string[] = [];
  while (messages.length < total) {
    const roll = random();
    const live = queues.filter((queue) => queue.length > 0);
    let message: DemoMessage | undefined;
    if (messages.length === Math.floor(total / 2) && sent.length > 0) {
      message = { kind: 'incompatible', body: JSON.stringify({ ...(JSON.parse(pick(sent)) as object), schemaVersion: '2.0' }) };
    } else if (roll < 0.005 || messages.length === Math.floor(total / 3) || (live.length === 0 && sent.length === 0)) {
      message = { kind: 'malformed', body: pick(['{"schemaVersion":"1.0","type":', 'not json at all', JSON.stringify({ schemaVersion: '1.0', type: 'demo.unknown' })]) };
    } else if ((roll < 0.085 || live.length === 0) && sent.length > 0) {
      message = { kind: 'duplicate', body: pick(sent) };
    } else {
      message = pick(live).shift();
      if (message) sent.push(message.body);
    }
    if (message) messages.push(message);
  }
  return { messages, reads: traffic.flatMap((share) => share.reads) };
}
