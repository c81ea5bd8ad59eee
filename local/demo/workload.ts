import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { JOB_TYPES } from '../../workloads/accounts/index.ts';

/** What one demo message is, so the summary can account for every one. */
export type DemoKind = 'credit' | 'debit' | 'sync-profile' | 'duplicate' | 'malformed' | 'incompatible';

export interface DemoMessage {
  readonly kind: DemoKind;
  readonly body: string;
}

export interface DemoWorkloadOptions {
  /** @default 3000 */
  readonly jobs?: number;
  /** @default 50 */
  readonly accounts?: number;
  /** @default 42 */
  readonly seed?: number;
}

/**
 * A reproducible demo workload: credits, debits (some past the balance), profile syncs, exact
 * duplicates of earlier messages (≈ 8 %), a few malformed bodies and one envelope of an unknown
 * major version — everything the worker must get right, in one stream.
 */
export function demoWorkload(options: DemoWorkloadOptions = {}): DemoMessage[] {
  const total = options.jobs ?? 3000;
  const accounts = options.accounts ?? 50;
  let state = options.seed ?? 42;
  const random = () => ((state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const accountId = () => `acc-${String(Math.floor(random() * accounts)).padStart(3, '0')}`;
  const envelope = (type: string, payload: Record<string, unknown>): Envelope =>
    createEnvelope({ type, resourceId: accountId(), payload, producerVersion: 'demo-1.0.0' });

  const messages: DemoMessage[] = [];
  const sent: string[] = [];
  // Every account opens with a credit, so later debits and syncs find it.
  for (let a = 0; a < Math.min(accounts, total); a += 1) {
    const body = JSON.stringify(createEnvelope({
      type: JOB_TYPES.credit, resourceId: `acc-${String(a).padStart(3, '0')}`, payload: { amount: 5_000 }, producerVersion: 'demo-1.0.0',
    }));
    messages.push({ kind: 'credit', body });
  }
  for (let i = messages.length; i < total; i += 1) {
    const roll = random();
    let message: DemoMessage;
    if (i === Math.floor(total / 2)) {
      message = { kind: 'incompatible', body: JSON.stringify({ ...envelope(JOB_TYPES.credit, { amount: 1 }), schemaVersion: '2.0' }) };
    } else if (roll < 0.005) {
      message = { kind: 'malformed', body: pick(['{"schemaVersion":"1.0","type":', 'not json at all', JSON.stringify({ schemaVersion: '1.0', type: 'account.credit' })]) };
    } else if (roll < 0.085 && sent.length > 0) {
      message = { kind: 'duplicate', body: pick(sent) };
    } else if (roll < 0.5) {
      message = { kind: 'credit', body: JSON.stringify(envelope(JOB_TYPES.credit, { amount: 100 + Math.floor(random() * 900) })) };
    } else if (roll < 0.85) {
      message = { kind: 'debit', body: JSON.stringify(envelope(JOB_TYPES.debit, { amount: 50 + Math.floor(random() * 700) })) };
    } else {
      message = { kind: 'sync-profile', body: JSON.stringify(envelope(JOB_TYPES.syncProfile, { reason: 'demo' })) };
    }
    if (message.kind !== 'malformed' && message.kind !== 'incompatible' && message.kind !== 'duplicate') sent.push(message.body);
    messages.push(message);
  }
  return messages;
}
