/**
 * Coalesces concurrent calls per key: while a call for a key is running, further calls for the
 * same key get its promise instead of starting their own. Scoped to one instance (one cache, one
 * container), never module state; the entry is removed when the call settles, so nothing is
 * remembered beyond the in-flight window.
 *
 * @example
 * import { SingleFlight } from '../shared/cache/index.ts';
 * const flights = new SingleFlight<string, Account | undefined>();
 * const account = await flights.run('acc-42', () => readFromTable('acc-42'));
 */
export class SingleFlight<K, V> {
  readonly #inFlight = new Map<K, Promise<V>>();

  /** Runs `work` for `key`, or joins the run already in flight for it. */
  run(key: K, work: () => Promise<V>): Promise<V> {
    const running = this.#inFlight.get(key);
    if (running) return running;
    const started = Promise.resolve()
      .then(work)
      .finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, started);
    return started;
  }

  /** True while a call for `key` is in flight (a {@link run} now would join it). */
  has(key: K): boolean {
    return this.#inFlight.has(key);
  }

  /** Keys with a call in flight (for tests and diagnostics). */
  get size(): number {
    return this.#inFlight.size;
  }
}
