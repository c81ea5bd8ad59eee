import type { DemoRequest, DemoTraffic } from '@ballast-stack/ballast/local';
import { JOB_TYPES } from '../schemas.ts';

const ACCOUNTS = 50;

/**
 * The account example's demo traffic: every account opens with a credit, then credits, debits
 * (some past the balance: `insufficient-funds`), transfers and profile syncs (the partner fake).
 */
export function accountDemo({ jobs, random, message }: DemoRequest): DemoTraffic {
  const count = Math.min(ACCOUNTS, Math.max(1, Math.floor(jobs / 10)));
  const id = (n: number) => `acc-${String(n).padStart(3, '0')}`;
  const anyAccount = () => id(Math.floor(random() * count));
  const openings = Array.from({ length: count }, (_, a) => message('credit', JOB_TYPES.credit, id(a), { amount: 5_000 }));
  const messages = Array.from({ length: Math.max(0, jobs - count) }, () => {
    const roll = random();
    if (roll < 0.45) return message('credit', JOB_TYPES.credit, anyAccount(), { amount: 100 + Math.floor(random() * 900) });
    if (roll < 0.75) return message('debit', JOB_TYPES.debit, anyAccount(), { amount: 50 + Math.floor(random() * 700) });
    if (roll < 0.85) {
      const from = Math.floor(random() * count);
      return message('transfer', JOB_TYPES.transfer, id(from), { to: id((from + 1 + Math.floor(random() * (count - 1))) % count), amount: 10 + Math.floor(random() * 500) });
    }
    return message('sync-profile', JOB_TYPES.syncProfile, anyAccount(), { reason: 'demo' });
  });
  return { openings, messages, reads: Array.from({ length: count }, (_, a) => `accounts/${id(a)}`) };
}
