/**
 * The acceptance test of ballast as a package: `npm pack`, then a team's own repository outside
 * this tree (test/fixtures/consumer-app: an `orders` workload with place, cancel and an external
 * pay, its CDK app, a plain Node ESM producer, its workload test) installs the tarball and uses
 * it through the public entry points only: it type-checks under a default strict `tsconfig`
 * (`module: nodenext`), its app synthesizes, `ballast dev` runs its stack locally, its producer's
 * jobs are answered by the read API, and its own test passes with `/testing`.
 *
 * Slow: 4–8 minutes on a 2-core machine (the pack builds the package, the install reads the npm
 * cache, `ballast dev` bundles four functions and starts the engines).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitOf, waitForOutput } from '../helpers/processes.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/consumer-app/', import.meta.url));
const TIMEOUT_MS = 20 * 60_000;
const own = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  name: string; devDependencies: Record<string, string>; peerDependencies: Record<string, string>; dependencies: Record<string, string>;
};
const locked = (JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> }).packages;
/** The version this repository is tested with, exactly (what the npm cache holds; a newer cdk-nag may add rules). */
const version = (name: string) => locked[`node_modules/${name}`]?.version ?? own.peerDependencies[name] ?? own.devDependencies[name] ?? 'latest';

/**
 * A stranger's environment: this Node first on the PATH (Node 24, what the package's engines ask
 * for), none of this repository's own variables (its source condition, its registry).
 */
function strangerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, ...extra };
  // (NODE_TEST_CONTEXT too: with it, a `node --test` inside reports to this runner instead of running.)
  for (const name of ['NODE_OPTIONS', 'NODE_TEST_CONTEXT', 'BALLAST_REGISTRY', 'BALLAST_LOCAL_FILE', 'BALLAST_ENV']) delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith('npm_') || name.startsWith('AWS_ENDPOINT_URL')) delete env[name];
  return env;
}

function run(command: string, args: readonly string[], cwd: string, env = strangerEnv(), timeoutMs = 10 * 60_000): string {
  const result = spawnSync(command, [...args], { cwd, env, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(result.status, 0, `${command} ${args.join(' ')} (in ${cwd}) failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('a team installs the packed package in its own repository', { timeout: TIMEOUT_MS }, () => {
  let scratch: string;
  let app: string;
  let tarball: string;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'ballast-consumer-'));
    // GIVEN the package as npm would publish it
    const packed = run('npm', ['pack', '--pack-destination', scratch, '--json'], REPO, { ...strangerEnv(), PATH: process.env.PATH ?? '' });
    const [{ filename }] = JSON.parse(packed.slice(packed.indexOf('['))) as [{ filename: string }];
    tarball = join(scratch, filename);
    // AND a repository of its own, outside this tree, that depends on it
    app = join(scratch, 'orders-service');
    cpSync(FIXTURE, app, { recursive: true });
    writeFileSync(join(app, 'package.json'), `${JSON.stringify({
      name: 'orders-service', version: '1.0.0', private: true, type: 'module',
      scripts: { test: 'node --test test/orders-workload.ts', typecheck: 'tsc --noEmit -p .' },
      dependencies: { [own.name]: `file:${tarball}`, '@aws-sdk/client-sqs': version('@aws-sdk/client-sqs'), zod: version('zod') },
      devDependencies: Object.fromEntries(['aws-cdk-lib', 'constructs', 'cdk-nag', 'cdk-monitoring-constructs', 'esbuild', 'fauxqs', 'amplify-dynamodb-simulator', '@cloud-copilot/iam-simulate', 'typescript', '@types/node']
        .map((name) => [name, version(name)])),
    }, null, 2)}\n`);
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], app);
  });

  after(() => {
    // BALLAST_KEEP_CONSUMER=1 keeps the scratch project to look into after a failure.
    if (scratch && process.env.BALLAST_KEEP_CONSUMER !== '1') rmSync(scratch, { recursive: true, force: true });
    else if (scratch) process.stdout.write(`consumer app kept in ${scratch}\n`);
  });

  it('ships built JavaScript, declarations and its licence, and no test, bench or source file', () => {
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).map((path) => path.replace(/^package\//, ''));
    assert.deepEqual(files.filter((path) => /^(test|bench|workloads)\//.test(path) || /\.test\./.test(path) || (/\.ts$/.test(path) && !/\.d\.ts$/.test(path))), []);
    for (const file of ['LICENSE', 'CHANGELOG.md', 'README.md', 'package.json', 'dist/shared/index.js', 'dist/shared/index.d.ts', 'dist/cli/bin/ballast.js']) {
      assert.ok(files.includes(file), `${file} is in the package`);
    }
  });

  it('type-checks under a default strict tsconfig (module nodenext)', () => {
    run(process.execPath, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', app], app);
  });

  it('synthesizes its own CDK app: its read route, its setting, its entity in the cache user\'s access string', () => {
    const outdir = join(scratch, 'cdk.out');
    run(process.execPath, ['bin/app.ts'], app, strangerEnv({
      CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({ env: 'dev', PAYMENTS_API_URL: 'https://payments.example.com' }),
    }));
    const template = JSON.parse(readFileSync(join(outdir, 'orders-dev.template.json'), 'utf8')) as { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
    const resources = Object.values(template.Resources);
    assert.equal(resources.filter((resource) => resource.Type === 'AWS::Lambda::Url').length, 1, 'the read API\'s Function URL');
    const variables = resources.filter((resource) => resource.Type === 'AWS::Lambda::Function')
      .map((resource) => (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {});
    assert.ok(variables.some((vars) => vars.PAYMENTS_API_URL === 'https://payments.example.com'), 'the worker gets the workload\'s setting');
    const user = resources.find((resource) => resource.Type === 'AWS::ElastiCache::User');
    assert.match(String(user?.Properties?.AccessString), /^on ~order:\* -@all /, 'the cache user may touch its entity\'s keys only');
    // AND the entries the functions were bundled from are the team's project's, not this repository's
    assert.ok(readdirSync(join(app, '.ballast', 'functions')).some((file) => file.startsWith('worker-')));
  });

  it('runs locally with `ballast dev`; a plain Node ESM producer\'s jobs are processed and read back; Ctrl-C stops it cleanly', { timeout: 8 * 60_000 }, async () => {
    const dev = spawn(process.execPath, [join(app, 'node_modules', '.bin', 'ballast'), 'dev'], { cwd: app, env: strangerEnv(), stdio: 'pipe' }) as ChildProcessWithoutNullStreams;
    try {
      const output = await waitForOutput(dev, /Press Ctrl-C to stop/, 5 * 60_000);
      assert.match(output, /workloads: orders/);
      assert.match(output, /fake\s+http:\/\/127\.0\.0\.1:\d+\s+PAYMENTS_API_URL/);
      assert.match(output, /stack orders-local is running locally/);
      const local = JSON.parse(readFileSync(join(app, '.ballast', 'local.json'), 'utf8')) as { environment: Record<string, string>; outputs: Record<string, string> };
      const sent = JSON.parse(run(process.execPath, ['bin/produce.mjs', local.outputs.JobsQueueUrl as string, 'o-1', 'o-2'], app, strangerEnv(local.environment)));
      assert.deepEqual(sent, { placed: 2, paid: 2, failed: 0 });
      const deadline = Date.now() + 90_000;
      let status: unknown;
      while (Date.now() < deadline) {
        const answers = await Promise.all(['o-1', 'o-2'].map(async (id) => {
          const response = await fetch(`${local.outputs.ReadApiUrl}orders/${id}`);
          return response.status === 200 ? ((await response.json()) as { status: string }).status : response.status;
        }));
        status = answers;
        if (answers.every((answer) => answer === 'paid')) break;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      assert.deepEqual(status, ['paid', 'paid'], 'both orders placed, then paid, as the read API answers');
      // AND the CLI finds the running stack and the team's registry by itself
      const line = JSON.stringify({ type: 'order.place', resourceId: 'o-3', idempotencyKey: 'place-o-3', payload: { total: 1 } });
      const cli = spawnSync(process.execPath, [join(app, 'node_modules', '.bin', 'ballast'), 'send', '--validate-only'], {
        cwd: app, env: strangerEnv(), encoding: 'utf8', timeout: 60_000, input: `${line}\n`,
      });
      assert.equal(cli.status, 0, cli.stderr);
      assert.match(cli.stdout, /1 valid, 0 invalid/);
      dev.kill('SIGINT');
      assert.equal(await exitOf(dev, 60_000), 0);
      assert.ok(!existsSync(join(app, '.ballast', 'local.json')), 'the discovery file is removed on shutdown');
    } finally {
      if (dev.exitCode === null) dev.kill('SIGKILL');
    }
  });

  it('passes its own workload test with `@ballast-stack/ballast/testing`', () => {
    const output = run('npm', ['test'], app);
    assert.match(output, /ℹ pass 1\n/);
    assert.match(output, /ℹ fail 0\n/);
  });
});
