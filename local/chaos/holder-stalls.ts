import { setTimeout as delay } from 'node:timers/promises';
import { lockWritesOnWire } from '../faults/index.ts';

/**
 * The chaos run's stalled lock holders: a share of the heartbeats and commits (lock writes other
 * than an acquisition) on the given resources is held on its way to DynamoDB until a newer holder
 * has taken the lock (at most `holdMs`), while jobs wait behind it, so a holder still alive loses
 * its lock and its late write must meet the fence.
 *
 * Held until the takeover rather than for a fixed time: the jobs behind a lock come back on whole
 * seconds of visibility, so a fixed hold a second past the lease let the write land before any of
 * them had tried again as often as not on a slow machine, and the fence was never put to the test.
 *
 * The hold sticks to the request's `ClientRequestToken`, one draw per token: the SDK gives up on a
 * held request after its request timeout (1 s for the chaos stack's 4 s functions) and sends it
 * again with the same token, and a copy let through at once would land inside the lease, so the
 * hold would force nothing.
 */
export interface HolderStalls {
  /** The proxy's `holdOf`. */
  readonly holdOf: (operation: string, body: unknown, stopping: AbortSignal) => number | Promise<void>;
  /** Share of the lock writes held (0 turns the fault off). */
  rate: number;
  /** Lock writes held so far (once per token, however many copies the SDK sent). */
  readonly held: () => number;
}

export interface HolderStallsOptions {
  readonly resources: ReadonlySet<string>;
  /** The longest a write is held when no newer holder comes for its lock. */
  readonly holdMs: number;
  readonly random: () => number;
  /** The fence of the newest acquisition of a resource's lock that landed (the fence watch's). */
  readonly newestFence: (resourceId: string) => number;
}

/** How often a held write looks for the takeover that lets it go. */
const TAKEOVER_POLL_MS = 20;

export function holderStalls(options: HolderStallsOptions): HolderStalls {
  // Per token: the hold its copies wait for (undefined: drawn and let through).
  const holds = new Map<string, Promise<void> | undefined>();
  let held = 0;

  const untilTakenOver = async (resourceId: string, fence: number, stopping: AbortSignal) => {
    for (let waited = 0; waited < options.holdMs && options.newestFence(resourceId) <= fence; waited += TAKEOVER_POLL_MS) {
      await delay(TAKEOVER_POLL_MS, undefined, { signal: stopping });
    }
  };

  const stalls: HolderStalls = {
    rate: 0,
    held: () => held,
    holdOf: (operation, body, stopping) => {
      if (operation !== 'TransactWriteItems' || stalls.rate === 0) return 0;
      const token = (body as { ClientRequestToken?: unknown } | undefined)?.ClientRequestToken;
      if (typeof token === 'string' && holds.has(token)) return holds.get(token) ?? 0;
      const write = lockWritesOnWire(body).find((candidate) => candidate !== undefined && candidate.kind !== 'acquire' && options.resources.has(candidate.resourceId));
      if (!write) return 0;
      const hold = options.random() < stalls.rate ? untilTakenOver(write.resourceId, write.fence, stopping) : undefined;
      if (typeof token === 'string') holds.set(token, hold);
      if (!hold) return 0;
      held += 1;
      return hold;
    },
  };
  return stalls;
}
