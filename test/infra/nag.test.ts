import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { NAG_NAMESPACE } from '../../infra/nag-suppressions.ts';
import { nagReport, type ValidationReport } from '../helpers/infra.ts';

/** Every finding the report still counts against the app (any plugin, any severity but info), one line each. */
function unacknowledged(report: ValidationReport): string[] {
  return report.pluginReports.flatMap((plugin) => [
    ...(plugin.metadata?.error ? [`${plugin.pluginName} failed: ${plugin.metadata.error}`] : []),
    ...plugin.violations
      .filter((violation) => violation.severity !== 'info')
      .flatMap((violation) => violation.violatingConstructs.map((c) => `${violation.severity} ${violation.ruleName} at ${c.constructPath}`)),
  ]);
}

/** The acknowledgments recorded on the construct tree: where, which rule, why. */
function acknowledgments(root: IConstruct) {
  return root.node.findAll().flatMap((construct) => construct.node.metadata
    .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
    .flatMap((entry) => Object.entries(entry.data as Record<string, string>)
      .map(([id, reason]) => ({ path: construct.node.path, id, reason }))));
}

describe('cdk-nag AwsSolutions', () => {
  for (const env of ENVIRONMENT_NAMES) {
    describe(env, () => {
      // One synth per environment, shared by its tests.
      let run: ReturnType<typeof nagReport>;
      before(() => {
        run = nagReport(env);
      });

      it('reports no unacknowledged error or warning', () => {
        // GIVEN the app as the CLI builds it WHEN synthesized with the rule pack THEN nothing is left
        const { report, synthError } = run;
        assert.deepEqual(unacknowledged(report), []);
        assert.equal(synthError, undefined);
        assert.ok(report.pluginReports.some((plugin) => plugin.pluginName === NAG_NAMESPACE), 'the AwsSolutions pack ran');
      });

      it('gives every acknowledged finding a written reason', () => {
        // GIVEN/WHEN
        const { app, report } = run;
        const suppressed = report.pluginReports.flatMap((plugin) => plugin.suppressedViolations ?? []);
        // THEN
        assert.ok(suppressed.length > 0);
        for (const violation of suppressed) {
          assert.ok((violation.reason ?? '').trim().length >= 40, `${violation.ruleName} at ${violation.acknowledgedAt}: reason too short`);
        }
        for (const ack of acknowledgments(app)) assert.ok(ack.reason.trim().length >= 40, `${ack.id} at ${ack.path}: reason too short`);
      });

      it('keeps no stale acknowledgment: each one silences a finding at or below where it is made', () => {
        // GIVEN the nag acknowledgments on the tree
        const { app, report } = run;
        const used = new Set(report.pluginReports
          .flatMap((plugin) => plugin.suppressedViolations ?? [])
          .map((violation) => `${violation.acknowledgedAt} ${violation.acknowledgedId}`));
        const nagAcks = acknowledgments(app).filter((ack) => ack.id.startsWith(`${NAG_NAMESPACE}::`));
        // THEN each of them was used
        assert.ok(nagAcks.length > 0);
        assert.deepEqual(nagAcks.map((ack) => `${ack.path} ${ack.id}`).filter((ack) => !used.has(ack)), []);
      });
    });
  }

  it('fails the synth, listing the findings, when the reviewed acknowledgments are missing', (t) => {
    t.mock.method(console, 'error', () => {}); // CDK prints the report it throws about
    // GIVEN the dev app without suppressReviewedFindings WHEN synthesized with the rule pack
    const { report, synthError } = nagReport('dev', { acknowledgeReviewed: false });
    // THEN the findings are reported as errors and the in-process synth throws
    const findings = unacknowledged(report);
    assert.ok(findings.some((f) => /^error AwsSolutions-IAM5\[Resource::\*\] at ballast-dev\/ReadApiServiceRole\/DefaultPolicy\/Resource$/.test(f)), findings.join('\n'));
    assert.ok(findings.some((f) => /^error AwsSolutions-IAM5\[Resource::\*\] at ballast-dev\/InvalidationRepairServiceRole\/DefaultPolicy\/Resource$/.test(f)));
    // AND no queue lacks a DLQ: the invalidator's on-failure queue has its own since the repair consumes it
    assert.deepEqual(findings.filter((f) => f.includes('AwsSolutions-SQS3')), []);
    assert.match(String(synthError), /Validation failed/);
  });
});
