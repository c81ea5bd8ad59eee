import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jitteredTtlMs } from '../../shared/cache/index.ts';

describe('jitteredTtlMs', () => {
  it('spans exactly [ttl × (1 − j), ttl × (1 + j)] at the ends of the random range', () => {
    assert.equal(jitteredTtlMs(300_000, 0.1, () => 0), 270_000);
    assert.equal(jitteredTtlMs(300_000, 0.1, () => 0.5), 300_000);
    assert.equal(jitteredTtlMs(300_000, 0.1, () => 0.999_999_9), 330_000);
  });

  it('stays within bounds, in whole milliseconds, and actually spreads', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2_000; i += 1) {
      const ttl = jitteredTtlMs(60_000, 0.2);
      assert.ok(Number.isInteger(ttl));
      assert.ok(ttl >= 48_000 && ttl <= 72_000, String(ttl));
      seen.add(ttl);
    }
    assert.ok(seen.size > 100, `only ${seen.size} distinct TTLs`);
  });

  it('without jitter is the TTL itself, and is never below 1 ms', () => {
    assert.equal(jitteredTtlMs(5_000, 0, () => 0.7), 5_000);
    assert.equal(jitteredTtlMs(1, 0.9, () => 0), 1);
  });

  it('rejects nonsense with the offending value', () => {
    assert.throws(() => jitteredTtlMs(0, 0.1), /ttlMs must be a finite number > 0, got 0/);
    assert.throws(() => jitteredTtlMs(1_000, 1), /jitterRatio must be in \[0, 1\), got 1/);
    assert.throws(() => jitteredTtlMs(1_000, -0.1), /jitterRatio/);
  });
});
