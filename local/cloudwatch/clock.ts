/**
 * The local cloud's metric clock: real time, or time running `scale` times faster from `startMs`,
 * so a rehearsal can play a 10-minute canary and its alarms' periods in 10 seconds. Metrics are
 * stamped and alarms evaluated on it; everything else (timeouts, leases) keeps real time.
 */
export function metricClock(scale = 1, startMs = Date.now()): () => number {
  if (!(scale >= 1) || !Number.isFinite(scale)) throw new RangeError(`a time scale is a number >= 1, got ${scale}`);
  return scale === 1 ? Date.now : () => startMs + (Date.now() - startMs) * scale;
}
