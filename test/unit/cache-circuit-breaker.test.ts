import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BREAKER_STATES, CacheConfigurationError, CircuitBreaker, type BreakerState } from '../../shared/cache/index.ts';

/** A breaker on a hand-driven clock, recording its transitions. */
function breakerAt(options: { failureThreshold?: number; openMs?: number } = {}) {
  const clock = { nowMs: 1_000_000 };
  const transitions: string[] = [];
  const breaker = new CircuitBreaker({
    ...options,
    nowMs: () => clock.nowMs,
    onStateChange: ({ from, to }: { from: BreakerState; to: BreakerState }) => transitions.push(`${from}->${to}`),
  });
  return { breaker, clock, transitions };
}

function fail(breaker: CircuitBreaker, times: number): void {
  for (let i = 0; i < times; i += 1) {
    assert.equal(breaker.tryAcquire(), true);
    breaker.onFailure();
  }
}

describe('CircuitBreaker', () => {
  it('defaults: opens after 3 consecutive failures and stays open for 5 s', () => {
    const { breaker, clock } = breakerAt();
    fail(breaker, 2);
    assert.equal(breaker.state, BREAKER_STATES.closed);
    fail(breaker, 1);
    assert.equal(breaker.state, BREAKER_STATES.open);
    clock.nowMs += 4_999;
    assert.equal(breaker.tryAcquire(), false);
    clock.nowMs += 1;
    assert.equal(breaker.state, BREAKER_STATES.halfOpen);
  });

  it('a success in between resets the count of consecutive failures', () => {
    const { breaker } = breakerAt({ failureThreshold: 3 });
    fail(breaker, 2);
    assert.equal(breaker.tryAcquire(), true);
    breaker.onSuccess();
    fail(breaker, 2);
    assert.equal(breaker.state, BREAKER_STATES.closed);
  });

  it('half-open lets exactly one trial call through; its success closes the breaker', () => {
    const { breaker, clock, transitions } = breakerAt({ failureThreshold: 1, openMs: 100 });
    fail(breaker, 1);
    assert.equal(breaker.tryAcquire(), false, 'open refuses without trying');
    clock.nowMs += 100;
    assert.equal(breaker.tryAcquire(), true, 'the trial call');
    assert.equal(breaker.tryAcquire(), false, 'a second caller while the trial runs');
    breaker.onSuccess();
    assert.equal(breaker.state, BREAKER_STATES.closed);
    assert.equal(breaker.tryAcquire(), true);
    assert.deepEqual(transitions, ['closed->open', 'open->half-open', 'half-open->closed']);
  });

  it('a failed trial call reopens the breaker for another full interval', () => {
    const { breaker, clock, transitions } = breakerAt({ failureThreshold: 2, openMs: 100 });
    fail(breaker, 2);
    clock.nowMs += 150;
    assert.equal(breaker.tryAcquire(), true);
    breaker.onFailure();
    assert.equal(breaker.state, BREAKER_STATES.open);
    clock.nowMs += 99;
    assert.equal(breaker.tryAcquire(), false, 'the interval restarts at the failed trial');
    clock.nowMs += 1;
    assert.equal(breaker.state, BREAKER_STATES.halfOpen);
    assert.deepEqual(transitions, ['closed->open', 'open->half-open', 'half-open->open', 'open->half-open']);
  });

  it('validates its options with the field and the value', () => {
    assert.throws(() => new CircuitBreaker({ failureThreshold: 0 }), (error: unknown) =>
      error instanceof CacheConfigurationError && /failureThreshold must be an integer >= 1, got 0/.test(error.message));
    assert.throws(() => new CircuitBreaker({ openMs: -1 }), /openMs must be > 0, got -1/);
  });
});
