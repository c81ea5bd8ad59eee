import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DOCTOR_DEFAULTS, type Evidence } from '../../shared/operations/doctor/evidence.ts';
import { checkResult } from '../helpers/doctor.ts';

// Only the fields the dependency check reads.
function evidence(dlqSentByReason: Record<string, number>, dependencyRejectionReasons: readonly string[]): Evidence {
  return {
    options: { ...DOCTOR_DEFAULTS, dependencyRejectionReasons },
    retriesByReason: { ok: true, value: {} },
    dlqSentByReason: { ok: true, value: dlqSentByReason },
    alarms: { ok: true, value: [] },
  } as unknown as Evidence;
}
const dependency = (e: Evidence) => checkResult('dependency', e);

describe('doctor: did a dependency change behaviour?', () => {
  it('fails on dead letters of a reason a workload declared as an external API\'s refusal, naming it in the replay command', () => {
    const verdict = dependency(evidence({ 'carrier-rejected': 4, 'insufficient-funds': 9 }, ['carrier-rejected']));
    assert.equal(verdict?.verdict, 'fail');
    assert.match(verdict?.next ?? '', /an external API refuses requests \(carrier-rejected\).*ballast dlq replay --reason carrier-rejected/);
  });

  it('knows no workload reason by itself: a business refusal is no dependency problem', () => {
    assert.equal(dependency(evidence({ 'carrier-rejected': 4, 'insufficient-funds': 9 }, []))?.verdict, 'ok');
  });
});
