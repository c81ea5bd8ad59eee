import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Evidence } from '../../shared/operations/doctor/evidence.ts';
import { checkResult } from '../helpers/doctor.ts';

// Only the fields the invalidation check reads; the rest of the evidence is irrelevant here.
function evidence(iteratorAgeMs: number | undefined, failures = 0): Evidence {
  return {
    invalidatorFailures: { visible: failures, inFlight: 0, delayed: 0 },
    invalidatorIteratorAgeMs: { ok: true, value: iteratorAgeMs },
    cache: { ok: true, value: { sampled: 10, mismatches: 0, repaired: 0, mismatchRate: 0, details: [] } },
  } as unknown as Evidence;
}
const invalidation = (e: Evidence) => checkResult('invalidation', e);

describe('doctor: is invalidation running?', () => {
  it('shows the stream iterator age and warns when the invalidator falls more than a minute behind', () => {
    assert.equal(invalidation(evidence(2_000))?.verdict, 'ok');
    assert.match(invalidation(evidence(2_000))?.evidence.join('\n') ?? '', /stream iterator age: 2s max/);
    assert.equal(invalidation(evidence(120_000))?.verdict, 'warn');
    assert.equal(invalidation(evidence(undefined))?.verdict, 'ok', 'no data (an idle stream) is not a problem');
    assert.equal(invalidation(evidence(1_000, 3))?.verdict, 'fail', 'failed batches on the on-failure queue');
  });
});
