import { lockWritesOnWire } from '../faults/index.ts';

/**
 * The chaos run's stalled lock holders: a share of the heartbeats and commits (lock writes other
 * than an acquisition) on the given resources is held on its way to DynamoDB past the lease, while
 * jobs wait behind it, so a newer holder takes the lock from one still alive and its late write
 * must meet the fence. For the DynamoDB fault proxy's `holdOf`.
 *
 * The hold sticks to the request's `ClientRequestToken`, one draw per token: the SDK gives up on a
 * held request after its request timeout (1 s for the chaos stack's 4 s functions) and sends it
 * again with the same token, and a copy let through at once would land inside the lease, so the
 * hold would force nothing.
 */
export interface HolderStalls {
  /** The proxy's `holdOf`. */
  readonly holdOf: (operation: string, body: unknown) => number;
  /** Share of the lock writes held (0 turns the fault off). */
  rate: number;
  /** Lock writes held so far (once per token, however many copies the SDK sent). */
  readonly held: () => number;
}

export function holderStalls(options: { readonly resources: ReadonlySet<string>; readonly holdMs: number; readonly random: () => number }): HolderStalls {
  // Per token: until when its copies are held (0: drawn and let through).
  const heldUntil = new Map<string, number>();
  let held = 0;
  const stalls: HolderStalls = {
    rate: 0,
    held: () => held,
    holdOf: (operation, body) => {
      if (operation !== 'TransactWriteItems' || stalls.rate === 0) return 0;
      const token = (body as { ClientRequestToken?: unknown } | undefined)?.ClientRequestToken;
      const until = typeof token === 'string' ? heldUntil.get(token) : undefined;
      if (until !== undefined) return Math.max(0, until - Date.now());
      const holds = lockWritesOnWire(body).some((write) => write !== undefined && write.kind !== 'acquire' && options.resources.has(write.resourceId));
      if (!holds) return 0;
      const hold = options.random() < stalls.rate;
      if (typeof token === 'string') heldUntil.set(token, hold ? Date.now() + options.holdMs : 0);
      if (!hold) return 0;
      held += 1;
      return options.holdMs;
    },
  };
  return stalls;
}
