/** Seeded randomness for the chaos run: the same seed sends the same messages and injects the same faults. */
/**
 * mulberry32: a tiny, fast, seedable PRNG with the shape of `Math.random` (floats in [0, 1)), so
 * chaos code can pass it wherever a `random` parameter is taken. Not for anything secret.
 *
 * @example
 * const random = seededRandom(42);
 * const jitter = backoffSeconds(3, {}, random);
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
