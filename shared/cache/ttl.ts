/**
 * A TTL spread uniformly over `[ttlMs × (1 − jitterRatio), ttlMs × (1 + jitterRatio)]`, rounded to
 * whole milliseconds and never below 1. Entries filled together (after a deploy, a flush or a
 * Redis restart) then expire at different moments instead of all missing at once.
 *
 * @param ttlMs - the nominal TTL, > 0
 * @param jitterRatio - the relative spread, in [0, 1); 0 disables jitter
 * @param random - a source of numbers in [0, 1). @default Math.random
 * @example
 * import { jitteredTtlMs } from '../shared/cache/index.ts';
 * jitteredTtlMs(300_000, 0.1); // somewhere in 270_000..330_000
 */
export function jitteredTtlMs(ttlMs: number, jitterRatio: number, random: () => number = Math.random): number {
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be a finite number > 0, got ${ttlMs}`);
  if (!(jitterRatio >= 0 && jitterRatio < 1)) throw new RangeError(`jitterRatio must be in [0, 1), got ${jitterRatio}`);
  const spread = ttlMs * jitterRatio;
  const unit = Math.min(Math.max(random(), 0), 1);
  return Math.max(1, Math.round(ttlMs - spread + 2 * spread * unit));
}
