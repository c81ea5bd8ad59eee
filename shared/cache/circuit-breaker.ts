import { withDefaults } from '../options/index.ts';
import { CacheConfigurationError } from './errors.ts';

/** The three states of a {@link CircuitBreaker}. */
export const BREAKER_STATES = {
  /** Calls go through; consecutive failures are counted. */
  closed: 'closed',
  /** Calls are refused without trying, until `openMs` has passed. */
  open: 'open',
  /** One trial call at a time is let through: success closes the breaker, failure reopens it. */
  halfOpen: 'half-open',
} as const;
export type BreakerState = (typeof BREAKER_STATES)[keyof typeof BREAKER_STATES];

export interface CircuitBreakerOptions {
  /**
   * Consecutive failures that open the breaker. Low, because every failed call costs a caller up
   * to a command timeout, and a dependency that failed three times in a row is rarely back on the fourth.
   * @default 3
   */
  readonly failureThreshold?: number;
  /**
   * How long the breaker stays open before it lets one trial call through (half-open). Short
   * enough that a recovered Redis is used again within seconds, long enough that an outage costs
   * one failed call per interval per container rather than one per request.
   * @default 5_000
   */
  readonly openMs?: number;
  /** Called on every state change (for logs and metrics). @default - nothing */
  readonly onStateChange?: (change: { readonly from: BreakerState; readonly to: BreakerState }) => void;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

const defaults = { failureThreshold: 3, openMs: 5_000, nowMs: Date.now };

/**
 * A closed/open/half-open circuit breaker around a dependency, driven by an injected clock.
 * It does not call anything itself: callers ask {@link tryAcquire} before a call and report the
 * outcome with {@link onSuccess} or {@link onFailure}. A permit from `tryAcquire` must be
 * followed by exactly one of the two.
 *
 * @example
 * import { CircuitBreaker } from '../shared/cache/index.ts';
 * const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: 5_000 });
 * if (breaker.tryAcquire()) {
 *   try { await redis.ping(); breaker.onSuccess(); } catch { breaker.onFailure(); }
 * }
 */
export class CircuitBreaker {
  readonly failureThreshold: number;
  readonly openMs: number;
  readonly #nowMs: () => number;
  readonly #onStateChange: CircuitBreakerOptions['onStateChange'];
  #state: BreakerState = BREAKER_STATES.closed;
  #failures = 0;
  #openedAtMs = 0;
  #probeInFlight = false;

  constructor(options: CircuitBreakerOptions = {}) {
    const merged = withDefaults(defaults, options);
    if (!Number.isInteger(merged.failureThreshold) || merged.failureThreshold < 1) {
      throw new CacheConfigurationError(`CircuitBreaker: failureThreshold must be an integer >= 1, got ${merged.failureThreshold}`);
    }
    if (!(merged.openMs > 0)) throw new CacheConfigurationError(`CircuitBreaker: openMs must be > 0, got ${merged.openMs}`);
    this.failureThreshold = merged.failureThreshold;
    this.openMs = merged.openMs;
    this.#nowMs = merged.nowMs;
    this.#onStateChange = merged.onStateChange;
  }

  /** The current state; an open breaker whose `openMs` has passed reads as half-open. */
  get state(): BreakerState {
    if (this.#state === BREAKER_STATES.open && this.#nowMs() - this.#openedAtMs >= this.openMs) {
      this.#transition(BREAKER_STATES.halfOpen);
    }
    return this.#state;
  }

  /**
   * Whether a call may be attempted now: always when closed, never when open, and once at a time
   * when half-open (the trial call; others are refused until it reports).
   */
  tryAcquire(): boolean {
    switch (this.state) {
      case BREAKER_STATES.closed:
        return true;
      case BREAKER_STATES.open:
        return false;
      default:
        if (this.#probeInFlight) return false;
        this.#probeInFlight = true;
        return true;
    }
  }

  /** The call succeeded: resets the failure count; a successful trial call closes the breaker. */
  onSuccess(): void {
    this.#failures = 0;
    this.#probeInFlight = false;
    if (this.#state !== BREAKER_STATES.closed) this.#transition(BREAKER_STATES.closed);
  }

  /** The call failed: opens the breaker at the threshold, or at once if it was a trial call. */
  onFailure(): void {
    this.#failures += 1;
    const wasProbe = this.#probeInFlight;
    this.#probeInFlight = false;
    if (wasProbe || this.#state === BREAKER_STATES.halfOpen || this.#failures >= this.failureThreshold) {
      this.#openedAtMs = this.#nowMs();
      if (this.#state !== BREAKER_STATES.open) this.#transition(BREAKER_STATES.open);
    }
  }

  #transition(to: BreakerState): void {
    const from = this.#state;
    this.#state = to;
    this.#onStateChange?.({ from, to });
  }
}
