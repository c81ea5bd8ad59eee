import type { OpsContext } from '../context.ts';
import { runChecks, type CheckResult, type Verdict } from './checks.ts';
import { gatherEvidence, type DoctorOptions } from './evidence.ts';

export { CHECKS, runChecks, VERDICTS, type CheckResult, type Verdict } from './checks.ts';
export { DOCTOR_DEFAULTS, gatherEvidence, type DoctorOptions, type Evidence } from './evidence.ts';

export interface DoctorReport {
  readonly stackName: string;
  readonly env: string;
  /** `fail` if any check failed, else `warn` if any warned, else `ok`. */
  readonly verdict: Verdict;
  readonly checks: readonly CheckResult[];
  readonly checkedAt: string;
}

/** Runs the incident checklist against the stack. */
export async function runDoctor(context: OpsContext, options: DoctorOptions = {}): Promise<DoctorReport> {
  const checks = runChecks(await gatherEvidence(context, options));
  const verdict: Verdict = checks.some((c) => c.verdict === 'fail') ? 'fail' : checks.some((c) => c.verdict === 'warn') ? 'warn' : 'ok';
  return { stackName: context.stack.stackName, env: context.stack.env, verdict, checks, checkedAt: new Date().toISOString() };
}
