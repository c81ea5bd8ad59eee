import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cdk = join(root, 'node_modules', 'aws-cdk', 'bin', 'cdk');

describe('the CDK CLI, as a user runs it', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`npx cdk synth -c env=${env} succeeds offline, bundling with the local esbuild (Docker unavailable)`, () => {
      const out = mkdtempSync(join(tmpdir(), `ballast-synth-${env}-`));
      try {
        // GIVEN no usable Docker binary and no network credentials
        const result = spawnSync(process.execPath, [cdk, 'synth', '-c', `env=${env}`, '--quiet', '-o', out], {
          cwd: root,
          encoding: 'utf8',
          timeout: 120_000,
          env: { ...process.env, CDK_DOCKER: '/nonexistent/docker', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' },
        });
        // THEN synth exits 0, with no cdk-nag finding left unacknowledged
        assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
        assert.doesNotMatch(result.stderr, /\[Error at|AwsSolutions-[A-Z]+\d+.*(ERROR|WARN)/);
        const template = JSON.parse(readFileSync(join(out, `ballast-${env}.template.json`), 'utf8')) as { Resources: Record<string, { Type: string }> };
        assert.ok(Object.values(template.Resources).some((r) => r.Type === 'AWS::Lambda::EventSourceMapping'));
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }
});
