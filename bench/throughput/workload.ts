import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { JOB_TYPES } from '../../workloads/accounts/schemas.ts';
import { seededRandom } from '../../local/chaos/random.ts';

/** The bench's traffic, as a new user would try it: credits over a few accounts, some sent twice. */
export interface CreditTraffic {
  /** Message bodies in send order: every credit once, plus the producer's duplicates. */
  readonly bodies: readonly string[];
  /** What each account's balance must be when every credit applied exactly once. */
  readonly expected: ReadonlyMap<string, number>;
}

/**
 * `credits` `account.credit` jobs of 1–9 units over `accounts` accounts, then `duplicates` of them
 * sent again (a producer retrying after a lost acknowledgement), shuffled in. Accounts and
 * idempotency keys start with `namespace` (default `bench`), so two traffics never share either.
 */
export function creditTraffic(options: { credits: number; accounts: number; duplicates: number; seed: number; namespace?: string }): CreditTraffic {
  const namespace = options.namespace ?? 'bench';
  const random = seededRandom(options.seed);
  const expected = new Map<string, number>();
  const envelopes: Envelope[] = [];
  for (let i = 0; i < options.credits; i += 1) {
    const resourceId = `${namespace}-${Math.floor(random() * options.accounts)}`;
    const amount = 1 + Math.floor(random() * 9);
    envelopes.push(createEnvelope({ type: JOB_TYPES.credit, resourceId, payload: { amount }, idempotencyKey: `${namespace}-credit-${options.seed}-${i}` }));
    expected.set(resourceId, (expected.get(resourceId) ?? 0) + amount);
  }
  const bodies = envelopes.map((envelope) => JSON.stringify(envelope));
  for (let i = 0; i < options.duplicates; i += 1) {
    const copy = bodies[Math.floor(random() * options.credits)] as string;
    bodies.splice(Math.floor(random() * (bodies.length + 1)), 0, copy);
  }
  return { bodies, expected };
}
