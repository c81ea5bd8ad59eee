/**
 * cfn-lint (AWS's CloudFormation linter, on the machine image) over the synthesized template of
 * every environment: 0 errors, and every warning one of the few explained below. A missing binary
 * fails the test loudly rather than skipping it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { synthStack } from '../helpers/infra.ts';

/** Warnings that are true of the template and harmless, each with why. */
const EXPLAINED_WARNINGS: Readonly<Record<string, { readonly why: string; readonly matches: RegExp }>> = {
  W3005: {
    why: 'CDK adds an explicit DependsOn on a function\'s execution role (so the role\'s policy exists before the function) besides the GetAtt of its ARN; '
      + 'the same for the handler of its default-security-group custom resource',
    matches: /(ServiceRole|CustomResourceProviderRole)[0-9A-F]{8}' dependency already enforced by a 'GetAtt'/,
  },
  W3010: {
    why: 'the tests synthesize without VPC context lookups, so CDK fills in its placeholder zones (dummy1a…); `cdk deploy` looks the real ones up into cdk.context.json',
    matches: /Avoid hardcoding availability zones 'dummy1[a-c]'/,
  },
};

interface Finding {
  readonly rule: string;
  readonly message: string;
  readonly path: string;
}

describe('cfn-lint: every environment\'s template', () => {
  const version = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' });
  it('cfn-lint is installed', () => {
    assert.equal(version.error, undefined,
      'cfn-lint is not on PATH: install it (pip install cfn-lint) — the template checks below cannot run without it');
    assert.match(version.stdout, /cfn-lint 1\./);
  });

  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: 0 errors, no unexplained warning`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'ballast-cfn-lint-'));
      try {
        const file = join(dir, `ballast-${env}.template.json`);
        writeFileSync(file, JSON.stringify(synthStack(env).template.toJSON(), null, 1));
        const findings = lint(file);
        const errors = findings.filter((f) => f.rule.startsWith('E'));
        assert.deepEqual(errors, [], `cfn-lint errors in ${env}`);
        const unexplained = findings.filter((f) => !f.rule.startsWith('E') && !EXPLAINED_WARNINGS[f.rule]?.matches.test(f.message));
        assert.deepEqual(unexplained, [], `unexplained cfn-lint findings in ${env}: explain them in EXPLAINED_WARNINGS or fix the template`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

/** cfn-lint's JSON findings; it exits non-zero whenever it finds anything, so the exit code is not the verdict. */
function lint(file: string): Finding[] {
  let output: string;
  try {
    output = execFileSync('cfn-lint', ['--format', 'json', file], { encoding: 'utf8' });
  } catch (error) {
    output = (error as { stdout?: string }).stdout ?? '';
    if (!output.trim().startsWith('[')) throw error;
  }
  const parsed = JSON.parse(output || '[]') as { Rule: { Id: string }; Message: string; Location: { Path?: (string | number)[] } }[];
  return parsed.map((f) => ({ rule: f.Rule.Id, message: f.Message, path: (f.Location.Path ?? []).join('/') }));
}
