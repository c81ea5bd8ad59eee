import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { explain, rehearseWith, violations } from './rehearse.ts';

/**
 * Upgrade scenarios: each v2 is this checkout plus fixture patches, rehearsed against HEAD on the
 * staging template (its canary, hooks and rollback alarms), about a minute and a half each. One
 * file, so the rehearsals run one after the other: each alarm needs its traffic's pace.
 */
describe('rehearse: upgrades that roll back', { concurrency: false }, () => {
  it('v2 throws on a fifth of its records and bumps the cache schema → rolled back inside the canary; nothing lost or doubled; v1 reads its own schema after', { timeout: 420_000 }, async () => {
    // At time × 3 the canary lasts 100 s: the rollback alarm (two bad periods of three) has room on a
    // loaded machine. Under CI load it once fired after the 30 s step at × 10, and once at 61 s into
    // the 60 s step at × 5 (its first period had no v2 fault, and the local metrics lagged).
    const run = await rehearseWith(['throws-on-a-fifth', 'cache-schema-bump'], ['--expect', 'rollback', '--jobs', '2000', '--time-scale', '3'], 400_000);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.equal(report.outcome, 'rollback');
    const [deployment] = report.update.deployments;
    assert.equal(deployment?.status, 'Stopped');
    assert.match(deployment?.alarm ?? '', /CodeFaults|Errors/, 'a rollback alarm of the new version decided');
    assert.ok((deployment?.maxWeight ?? 1) < 1, 'stopped during the canary step, before the alias moved');
    assert.deepEqual(violations(report), {}, 'every job accounted for: none lost, none applied twice');
    const [v1, v2] = report.versions;
    assert.ok((v2?.retried ?? 0) > 0, 'v2 failed records');
    assert.ok((v1?.processed ?? 0) > report.jobs.beforeUpdate, 'v1 kept processing through and after the canary');
    assert.ok((report.reads.byPhase.update?.v2 ?? 0) > 0, 'v2\'s read API served its own cache schema during the update');
    assert.ok((report.reads.byPhase.after?.v1 ?? 0) > 0, 'after the rollback, v1\'s read API reads schema 1 again');
    assert.deepEqual(report.staleCache, { 'v1 tree': 0, 'v2 tree': 0 }, 'no cache entry of either schema differs from the table');
  });

  it('v2 slows past the duration alarm → rolled back', { timeout: 420_000 }, async () => {
    // Each v2 batch takes 24.5 s of real time and holds one of the 5 concurrent invocations: the
    // slow ones end in waves about 25 s apart. At time × 3 an alarm period is 20 s, so two waves
    // breach two periods in a row well inside the 100 s canary, even on a loaded machine.
    const run = await rehearseWith(['slow'], ['--expect', 'rollback', '--time-scale', '3', '--jobs', '1000'], 400_000);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(report.outcome, 'rollback', explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.match(report.update.deployments[0]?.alarm ?? '', /Duration/, report.reason);
    assert.ok((report.versions[1]?.p99DurationMs ?? 0) >= 24_000);
    assert.deepEqual(violations(report), {});
  });

  it('v2 fails its readiness check → no traffic shifted', async () => {
    const run = await rehearseWith(['readiness-fails'], ['--expect', 'rollback', '--jobs', '600']);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    const [deployment] = report.update.deployments;
    assert.equal(deployment?.status, 'Failed');
    assert.match(deployment?.hook ?? '', /PreTrafficCheck/);
    assert.equal(deployment?.maxWeight, 0);
    assert.equal(report.versions[1]?.processed, 0, 'v2 ran no job');
    assert.deepEqual(violations(report), {});
  });
});

describe('rehearse: an upgrade that lost a grant', { concurrency: false }, () => {
  it('--revoke lambda:InvokeFunction → the pre-traffic hook is refused invoking v2, the deployment rolls back, and the report names the refusal', async () => {
    const run = await rehearseWith([], ['--expect', 'rollback', '--revoke', 'lambda:InvokeFunction', '--jobs', '300']);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.equal(report.outcome, 'rollback');
    assert.match(report.reason, /BeforeAllowTraffic hook .* reported Failed/);
    assert.deepEqual(report.access.revoked, ['lambda:InvokeFunction']);
    assert.ok((report.access.byAction['lambda:InvokeFunction']?.refused ?? 0) > 0, JSON.stringify(report.access));
    assert.match(report.access.latestRefusals.join('\n'), /PreTraffic.* is not authorized to perform: lambda:InvokeFunction on resource: .*:function:.*:2 because no identity-based policy allows/);
    assert.match(run.output, /local IAM: \d+ calls refused \(revoked: lambda:InvokeFunction\): lambda:InvokeFunction ×\d+/);
    assert.deepEqual(violations(report), {}, 'every job accounted for on v1');
  });
});

describe('rehearse: upgrades that promote', { concurrency: false }, () => {
  it('a healthy v2 (this checkout) → promoted, exit 0, every job accounted for', async () => {
    const run = await rehearseWith([], ['--expect', 'promote']);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.equal(report.update.status, 'UPDATE_COMPLETE');
    const steps = report.events.map((event) => event.message).join('\n');
    for (const step of [/BeforeAllowTraffic: .* reported Succeeded/, /AllowTraffic: 10 % → version 2/, /AllowTraffic: 100 % → version 2/, /AfterAllowTraffic: .* reported Succeeded/]) {
      assert.match(steps, step);
    }
    assert.ok((report.versions[1]?.processed ?? 0) > 0, 'v2 processed jobs');
    assert.deepEqual(violations(report), {});
    assert.match(run.output, /ballast doctor: /, 'doctor ran at the end');
  });

  it('v2\'s producer writes envelope 1.1 with a new optional field → v1 processes it', async () => {
    const run = await rehearseWith(['envelope-minor'], ['--expect', 'promote', '--time-scale', '20']);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.ok(report.jobs.byV2Producer > 0);
    const [v1] = report.versions;
    assert.ok((v1?.processed ?? 0) > report.jobs.beforeUpdate, 'v1 processed envelopes v2\'s producer wrote');
    assert.equal(v1?.unreadable, 0);
    assert.deepEqual(violations(report), {});
  });

  it('v2 requires major 2 envelopes during the canary → v1 retries them as incompatible-version; after promotion the replay completes them', async () => {
    const run = await rehearseWith(['envelope-major-2'], ['--expect', 'promote']);
    const report = run.report;
    assert.ok(report, explain(run));
    assert.equal(run.code, 0, explain(run));
    assert.ok((report.versions[0]?.unreadable ?? 0) > 0, 'v1 could not read v2\'s envelopes and retried them');
    // Nine in ten deliveries go to v1 during the canary: those its five receives all reached were dead-lettered by it.
    assert.ok(report.jobs.replayed > 0, 'the replay after promotion had dead letters to complete');
    assert.equal(report.jobs.deadLetters['incompatible-version'], undefined, 'none left in the DLQ after the replay');
    assert.deepEqual(violations(report), {}, 'every one completed');
  });
});
