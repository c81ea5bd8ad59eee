import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rehearseWith, violations } from './rehearse.ts';

/** Upgrades that ship, rehearsed against HEAD on the staging template; about a minute and a half each. */
describe('rehearse: upgrades that promote', { concurrency: false }, () => {
  it('a healthy v2 (this checkout) → promoted, exit 0, every job accounted for', async () => {
    const run = await rehearseWith([], ['--expect', 'promote']);
    const report = run.report;
    assert.ok(report, run.output.slice(-3_000));
    assert.equal(run.code, 0, run.output.slice(-3_000));
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
    const run = await rehearseWith(['envelope-minor'], ['--expect', 'promote']);
    const report = run.report;
    assert.ok(report, run.output.slice(-3_000));
    assert.equal(run.code, 0, run.output.slice(-3_000));
    assert.ok(report.jobs.byV2Producer > 0);
    const [v1] = report.versions;
    assert.ok((v1?.processed ?? 0) > report.jobs.beforeUpdate, 'v1 processed envelopes v2\'s producer wrote');
    assert.equal(v1?.unreadable, 0);
    assert.deepEqual(violations(report), {});
  });

  it('v2 requires major 2 envelopes during the canary → v1 retries them as incompatible-version; after promotion the replay completes them', async () => {
    const run = await rehearseWith(['envelope-major-2'], ['--expect', 'promote']);
    const report = run.report;
    assert.ok(report, run.output.slice(-3_000));
    assert.equal(run.code, 0, run.output.slice(-3_000));
    assert.ok((report.versions[0]?.unreadable ?? 0) > 0, 'v1 could not read v2\'s envelopes and retried them');
    assert.equal(report.jobs.deadLetters['incompatible-version'], undefined, 'none left in the DLQ after the replay');
    assert.deepEqual(violations(report), {}, 'every one completed');
  });
});
