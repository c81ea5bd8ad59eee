import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { treeCopy } from '../../local/rehearse/tree.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** `npm run rehearse -- ...args`, bounded in time; resolves with its exit code and output. */
function rehearse(args: readonly string[], timeoutMs = 120_000, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(REPO, 'local', 'rehearse', 'main.ts'), ...args], { cwd: REPO, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` });
    });
  });
}

describe('rehearse: bad input exits 2 before anything starts', () => {
  it('an unknown ref', async () => {
    const { code, output } = await rehearse(['--from', 'no-such-ref-anywhere']);
    assert.equal(code, 2, output);
    assert.match(output, /--from\/--to no-such-ref-anywhere: not a commit of/);
  });

  it('flags it cannot use, every problem named at once', async () => {
    const { code, output } = await rehearse(['--expect', 'maybe', '--time-scale', '0', '--env', 'moon']);
    assert.equal(code, 2, output);
    for (const problem of [/--from <git-ref> is required/, /--expect must be promote or rollback, got 'maybe'/, /--time-scale must be a whole number from 1 to 600, got '0'/, /--env must be one of local, dev, staging, prod, got 'moon'/]) {
      assert.match(output, problem);
    }
  });

  it('a v2 that does not build (a dirty build), with what the synth printed', async () => {
    const tree = treeCopy(REPO, 'broken');
    try {
      appendFileSync(join(tree.dir, 'workloads', 'app.ts'), '\nthrow new Error("v2 does not synthesize");\n');
      const { code, output } = await rehearse(['--from', 'HEAD', '--to-dir', tree.dir]);
      assert.equal(code, 2, output);
      assert.match(output, /--to-dir .* does not build: synthesizing the CDK app failed .*v2 does not synthesize/s);
      assert.doesNotMatch(output, /starting engines/, 'nothing was started for a build that failed');
    } finally {
      tree.remove();
    }
  });
});

describe('rehearse: a stack that cannot start exits 3', () => {
  it('without a Java runtime for DynamoDB Local, after both versions built', async () => {
    // git, node, npx and sh (the bundling runs esbuild through them) stay reachable; java (in /usr/bin with everything else) does not.
    const bin = mkdtempSync(join(tmpdir(), 'ballast-no-java-'));
    try {
      for (const command of ['git', 'npx', 'sh']) symlinkSync(execFileSync('which', [command], { encoding: 'utf8' }).trim(), join(bin, command));
      const { code, output } = await rehearse(['--from', 'HEAD'], 180_000, { PATH: `${bin}:${dirname(process.execPath)}` });
      assert.equal(code, 3, output);
      assert.match(output, /the engines did not start: .*Java/s);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
