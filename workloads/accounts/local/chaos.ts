import { REASONS } from '@ballast-stack/ballast';
import type { ChaosCheck, ChaosJob, ChaosTrafficRequest, WorkloadChaos } from '@ballast-stack/ballast/local';
import { PARTNER_API_URL } from '../index.ts';
import { ACCOUNT_REASONS } from '../reasons.ts';
import { JOB_TYPES } from '../schemas.ts';
import { poisonMessages } from './poison.ts';

const ACCOUNTS = 200;
/** The partner's answer time for the convoy's account: past the chaos stack's 1.5 s lease, within its 4 s timeout. */
const CONVOY_SLOW_MS = 2_500;
/** The convoy's job kind; a sync like any other. */
const CONVOY = 'convoy-sync';
const SYNCS = new Set(['sync', CONVOY]);

/**
 * The account example in the chaos run: credits, debits (one in ten past any balance),
 * expected-version debits (mostly stale), transfers between two hot accounts, profile syncs
 * (external, the partner fake), all skewed towards a few hot accounts so locks, lanes and
 * transactions contend; a convoy of syncs on one cold account whose partner answers slowly, so
 * jobs wait on its lock for longer than their receives last; and the fuzzer's poison on its
 * messages.
 */
export const accountChaos: WorkloadChaos = {
  weight: 2,
  rejections: { [ACCOUNT_REASONS.partnerRejected]: PARTNER_API_URL },
  traffic({ seed, random, jobs, job }: ChaosTrafficRequest) {
    const accountIds = Array.from({ length: ACCOUNTS }, (_, i) => `acc-${String(i).padStart(4, '0')}`);
    // Squaring a uniform draw puts half the traffic on the hottest ~25 % of accounts.
    const hot = () => accountIds[Math.floor(random() ** 2 * ACCOUNTS)] as string;
    const large = () => (random() < 0.1 ? 5_000_000 : 1 + Math.floor(random() * 1_500));
    return {
      sizes: { accounts: ACCOUNTS },
      reads: accountIds.map((id) => `accounts/${id}`),
      openings: accountIds.map((id) => job('opening-credit', JOB_TYPES.credit, id, { amount: 10_000 }, [])),
      // The coldest account (the draw favours the front): the main traffic's syncs rarely touch its lock.
      convoy: () => ({
        api: PARTNER_API_URL, resourceId: accountIds[ACCOUNTS - 1] as string, slowMs: CONVOY_SLOW_MS,
        jobs: Array.from({ length: Math.min(40, Math.max(12, Math.round(jobs / 100))) }, () => job(CONVOY, JOB_TYPES.syncProfile, accountIds[ACCOUNTS - 1] as string, { reason: 'convoy' }, [])),
      }),
      next(): ChaosJob {
        const accountId = hot();
        const mix = random();
        if (mix < 0.45) return job('credit', JOB_TYPES.credit, accountId, { amount: 1 + Math.floor(random() * 1_000) }, []);
        if (mix < 0.69) return job('debit', JOB_TYPES.debit, accountId, { amount: large() }, [ACCOUNT_REASONS.insufficientFunds]);
        if (mix < 0.77) {
          const expectedVersion = 1 + Math.floor(random() * 40);
          return job('versioned-debit', JOB_TYPES.debit, accountId, { amount: 1 + Math.floor(random() * 100), expectedVersion },
            [REASONS.staleVersion, ACCOUNT_REASONS.insufficientFunds]);
        }
        if (mix < 0.88) return job('sync', JOB_TYPES.syncProfile, accountId, { reason: 'chaos' }, []);
        let to = hot();
        if (to === accountId) to = accountIds[(accountIds.indexOf(accountId) + 1) % ACCOUNTS] as string;
        return job('transfer', JOB_TYPES.transfer, accountId, { to, amount: large() }, [ACCOUNT_REASONS.insufficientFunds]);
      },
      poison: (count) => poisonMessages({ seed, count, resourceIds: accountIds }).map((message) => ({
        ...message, jobKind: message.valid ? (JSON.parse(message.body).type === JOB_TYPES.syncProfile ? 'sync' : 'credit') : undefined,
      })),
    };
  },
  invariants: {
    ledgerMismatches: 'accounts whose balance or version differs from their completed jobs (double or missing effects, a half-applied transfer)',
    negativeBalances: 'accounts with a negative balance (a debit or transfer applied past the funds, its condition lost)',
    syncEffects: 'committed profile syncs without exactly one partner effect, or partner effects for a job that is no sync',
  },
  check({ completed, state, jobs, apis, violate }: ChaosCheck) {
    // The ledger: every account equals the sum of its completed jobs, each counted once.
    const expected = new Map<string, { balance: number; version: number }>();
    const change = (accountId: string, delta: number) => {
      const entry = expected.get(accountId) ?? { balance: 0, version: 0 };
      expected.set(accountId, { balance: entry.balance + delta, version: entry.version + 1 });
    };
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
    // The ledger can balance with a debit that should have been refused: the funds' condition is checked on its own.
    for (const [accountId, item] of accounts) if (Number(item.balance ?? 0) < 0) violate('negativeBalances', `${accountId}: balance ${String(item.balance)}`);
    for (const accountId of new Set([...expected.keys(), ...accounts.keys()])) {
      const want = expected.get(accountId) ?? { balance: 0, version: 0 };
      const item = accounts.get(accountId);
      if (Number(item?.balance ?? 0) !== want.balance || Number(item?.version ?? 0) !== want.version) {
        violate('ledgerMismatches', `${accountId}: table balance ${String(item?.balance)} v${String(item?.version)}, jobs say ${want.balance} v${want.version}`);
      }
    }
    // The partner: one effect for each committed sync, none for anything else.
    const partner = apis.get(PARTNER_API_URL);
    for (const [key, seen] of partner?.keys() ?? []) {
      if (seen.effects > 0 && !SYNCS.has(jobs.get(key)?.kind ?? '')) violate('syncEffects', `${key}: partner effect for a key that is not a sync`);
    }
    for (const [key, record] of completed) {
      if (record.jobType === JOB_TYPES.syncProfile && (partner?.keys().get(key)?.effects ?? 0) !== 1) {
        violate('syncEffects', `${key}: committed sync with ${partner?.keys().get(key)?.effects ?? 0} partner effects`);
      }
    }
  },
};
