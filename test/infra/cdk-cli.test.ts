import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cdk = join(root, 'node_modules', 'aws-cdk', 'bin', 'cdk');
/** The inputs a real deployment must be given (`deployConfig`), as a user passes them. */
const REQUIRED_FLAGS: Record<string, string[]> = {
  local: [],
  dev: ['-c', 'PARTNER_API_URL=https://partner.example.net', '-c', 'CARRIER_API_URL=https://carrier.example.net'],
  staging: ['-c', 'PARTNER_API_URL=https://partner.example.net', '-c', 'CARRIER_API_URL=https://carrier.example.net', '-c', 'alarmEmail=oncall@example.com'],
  prod: ['-c', 'PARTNER_API_URL=https://partner.example.net', '-c', 'CARRIER_API_URL=https://carrier.example.net', '-c', 'alarmEmail=oncall@example.com'],
};

/** Runs the CDK CLI with `node` (default: this test's Node 24) and `PATH` as given. */
function runCdk(args: string[], options: { node?: string; path?: string } = {}) {
  return spawnSync(options.node ?? process.execPath, [cdk, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, PATH: options.path ?? process.env.PATH, CDK_DOCKER: '/nonexistent/docker', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' },
  });
}

/** A Node older than 24 on this machine (the image's own), if there is one. */
function olderNode(): string | undefined {
  const found = spawnSync('/bin/sh', ['-c', 'for n in /usr/bin/node /usr/local/bin/node /bin/node; do [ -x "$n" ] && echo "$n $($n --version)"; done'], { encoding: 'utf8' });
  return found.stdout.split('\n').map((line) => line.split(' ')).find(([, version]) => version && Number(version.slice(1).split('.')[0]) < 24)?.[0];
}

describe('the CDK CLI, as a user runs it', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`npx cdk synth -c env=${env} succeeds offline, bundling with the local esbuild (Docker unavailable)`, () => {
      const out = mkdtempSync(join(tmpdir(), `ballast-synth-${env}-`));
      try {
        // GIVEN no usable Docker binary and no network credentials
        const result = runCdk(['synth', '-c', `env=${env}`, ...(REQUIRED_FLAGS[env] ?? []), '--quiet', '-o', out]);
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

  it('refuses a synth without -c env, and one missing a required flag, naming what to pass', () => {
    const noEnv = runCdk(['synth', '--quiet']);
    assert.notEqual(noEnv.status, 0);
    assert.match(noEnv.stderr, /No environment given: pass -c env=<local\|dev\|staging\|prod>/);
    const prod = runCdk(['synth', '-c', 'env=prod', '--quiet']);
    assert.notEqual(prod.status, 0);
    assert.match(prod.stderr, /env=prod: -c PARTNER_API_URL=\S+ is required; -c CARRIER_API_URL=\S+ is required; -c alarmEmail=\S+ is required/);
  });

  it('works with an older Node first on PATH (a global cdk): the app runs on the pinned Node 24', (t) => {
    const older = olderNode();
    if (!older) return t.skip('no Node older than 24 on this machine');
    const out = mkdtempSync(join(tmpdir(), 'ballast-synth-old-node-'));
    try {
      // GIVEN the CLI itself running on the machine's older Node, which is also first on PATH
      const path = [dirname(older), ...(process.env.PATH ?? '').split(':').filter((dir) => dir !== dirname(older))].join(':');
      const result = runCdk(['synth', '-c', 'env=local', '--quiet', '-o', out], { node: older, path });
      // THEN the app (TypeScript run directly, which needs Node 24) still synthesizes
      assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
      assert.doesNotMatch(result.stderr, /ERR_UNKNOWN_FILE_EXTENSION/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
