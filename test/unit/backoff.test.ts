import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoffSeconds } from '../../shared/batch/index.ts';
import { payloadHash } from '../../shared/idempotency/index.ts';

describe('backoffSeconds', () => {
  it('grows with the receive count, jittered between half and all of the exponential delay', () => {
    assert.equal(backoffSeconds(1, {}, () => 0), 1);
    assert.equal(backoffSeconds(1, {}, () => 1), 2);
    assert.equal(backoffSeconds(3, {}, () => 0), 4);
    assert.equal(backoffSeconds(3, {}, () => 1), 8);
  });

  it('is capped, and honours a known wait', () => {
    assert.equal(backoffSeconds(30, { maxSeconds: 60 }, () => 1), 60);
    assert.equal(backoffSeconds(1, {}, () => 0, 12.2), 13);
    // A known wait past the cap is still waited out (up to SQS's 12 hours): met sooner, the record would only spend a receive
    assert.equal(backoffSeconds(1, { maxSeconds: 60 }, () => 0, 90), 90);
    assert.equal(backoffSeconds(1, {}, () => 0, 50_000), 43_200);
  });

  it('spreads one burst of retries instead of returning them together', () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const delays = new Set(Array.from({ length: 50 }, () => backoffSeconds(6, {}, random)));
    assert.ok(delays.size > 10, `only ${delays.size} distinct delays`);
  });
});

describe('payloadHash', () => {
  it('ignores key order but not values, type or resource', () => {
    const job = (type: string, resourceId: string, payload: unknown) => ({ type, resourceId, payload });
    assert.equal(payloadHash(job('t', 'r', { a: 1, b: { c: 2, d: 3 } })), payloadHash(job('t', 'r', { b: { d: 3, c: 2 }, a: 1 })));
    assert.notEqual(payloadHash(job('t', 'r', { a: 1 })), payloadHash(job('t', 'r', { a: 2 })));
    assert.notEqual(payloadHash(job('t', 'r', { a: 1 })), payloadHash(job('u', 'r', { a: 1 })));
    assert.notEqual(payloadHash(job('t', 'r', { a: 1 })), payloadHash(job('t', 's', { a: 1 })), 'the same key on another resource is another job');
  });
});
