import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { roundTripsInSeries } from '../../bench/throughput/round-trips.ts';

describe('throughput bench: round trips in series', () => {
  it('counts the longest chain of requests each sent after the one before it was answered', () => {
    assert.equal(roundTripsInSeries([]), 0);
    // Ten side by side: one round trip.
    assert.equal(roundTripsInSeries(Array.from({ length: 10 }, (_, i) => ({ sentMs: i * 0.1, answeredMs: 20 + i }))), 1);
    // In progress → effect → completed, one after another: three.
    assert.equal(roundTripsInSeries([{ sentMs: 0, answeredMs: 10 }, { sentMs: 10, answeredMs: 20 }, { sentMs: 21, answeredMs: 30 }]), 3);
    // A wave, then a request overlapping the second wave's (not after it), given in any order: two.
    assert.equal(roundTripsInSeries([{ sentMs: 12, answeredMs: 30 }, { sentMs: 0, answeredMs: 10 }, { sentMs: 11, answeredMs: 25 }, { sentMs: 1, answeredMs: 11 }]), 2);
  });
});
