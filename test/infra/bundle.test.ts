/**
 * The one infrastructure test that bundles: the worker is built exactly as the stack builds it
 * (BallastFunction → NodejsFunction → local esbuild), then the bundle is imported the way the
 * Lambda runtime would import it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { App, Stack } from 'aws-cdk-lib';
import { BallastFunction } from '../../infra/constructs/ballast-function.ts';
import { frameworkModule, writeFunctionEntry } from '../../infra/constructs/function-entry.ts';
import { modulePath } from '../../shared/workloads/load.ts';
import { registry } from '../fixtures/workloads/registry.ts';
import { REPO, TEST_SETTINGS } from '../helpers/infra.ts';

/** The entry the stack generates for one of its functions over the test registry. */
const entryOf = (name: string, factory: string, defaults?: string[]) => writeFunctionEntry(REPO, {
  name, module: frameworkModule(`functions/${name}/index`), factory, registry: registry.module, defaults,
});

/** What the worker reads at cold start; dummy values, nothing is called. */
const WORKER_ENV = {
  STATE_TABLE_NAME: 'state-table',
  CONTROL_TABLE_NAME: 'control-table',
  DEAD_LETTER_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq',
  ...TEST_SETTINGS,
  WORKER_VERSION: 'bundle-test',
};

describe('worker bundle', () => {
  let outdir: string;
  let bundleDir: string;
  let readApiDir: string;
  const savedDocker = process.env.CDK_DOCKER;

  before(() => {
    // GIVEN an app that bundles, where any attempt to fall back to Docker fails
    process.env.CDK_DOCKER = '/nonexistent/docker-is-not-allowed';
    outdir = mkdtempSync(join(tmpdir(), 'ballast-bundle-'));
    const app = new App({ outdir });
    const stack = new Stack(app, 'Bundle', { env: { account: '123456789012', region: 'eu-west-1' } });
    new BallastFunction(stack, 'Worker', {
      functionName: 'worker', projectRoot: REPO,
      entry: entryOf('worker', 'workerHandler', registry.workloads.map((workload) => modulePath(workload.jobs))),
    });
    new BallastFunction(stack, 'ReadApi', { functionName: 'read-api', projectRoot: REPO, entry: entryOf('read-api', 'readApiHandler') });
    // WHEN it is synthesized
    app.synth();
    const assets = readdirSync(outdir).filter((name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.mjs')));
    assert.equal(assets.length, 2, `two bundled assets expected, found ${assets.join(', ')}`);
    const bundling = (name: string) => join(outdir, assets.find((asset) => readFileSync(join(outdir, asset, 'index.mjs.map'), 'utf8').includes(`functions/${name}/index.ts`)) ?? 'missing');
    bundleDir = bundling('worker');
    readApiDir = bundling('read-api');
  });

  after(() => {
    if (savedDocker === undefined) delete process.env.CDK_DOCKER;
    else process.env.CDK_DOCKER = savedDocker;
    if (outdir) rmSync(outdir, { recursive: true, force: true });
  });

  it('is one minified ESM file with a source map, built by the local esbuild', () => {
    // THEN
    const code = readFileSync(join(bundleDir, 'index.mjs'), 'utf8');
    const lines = code.split('\n').filter((line) => line.trim() !== '');
    // Readable output averages well under 100 characters a line; minified output runs to thousands.
    assert.ok(code.length / lines.length > 1_000, `not minified: ${lines.length} lines for ${code.length} characters`);
    assert.match(code, /^import \{ createRequire as __ballastCreateRequire \} from 'node:module';/, 'the createRequire banner comes first');
    assert.match(code, /\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
    const map = JSON.parse(readFileSync(join(bundleDir, 'index.mjs.map'), 'utf8')) as { sources: string[] };
    assert.ok(map.sources.some((source) => source.endsWith('functions/worker/index.ts')), 'the map points at the TypeScript sources');
    assert.ok(map.sources.some((source) => source.endsWith('workloads/accounts/jobs/index.ts')), 'with the registry\'s job code');
    assert.deepEqual(readdirSync(bundleDir).sort(), ['index.mjs', 'index.mjs.map']);
  });

  it('keeps node:http and node:https lazy: importing it loads no undici (~20 ms of a cold start)', () => {
    // WHEN the bundle is imported in a fresh Node, as a cold start imports it
    const probe = `await import(${JSON.stringify(pathToFileURL(join(bundleDir, 'index.mjs')).href)});`
      + "process.stdout.write(JSON.stringify(process.moduleLoadList.filter((name) => name.includes('undici'))));";
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { env: { PATH: process.env.PATH, ...WORKER_ENV }, encoding: 'utf8', timeout: 60_000 });
    assert.equal(child.status, 0, child.stderr);
    // THEN fetch's engine was never loaded: the SDK's imports of node:http and node:https were
    // bundled as require() takes them, not as ES module imports that read every lazy export
    assert.deepEqual(JSON.parse(child.stdout), []);
    const code = readFileSync(join(bundleDir, 'index.mjs'), 'utf8');
    assert.doesNotMatch(code, /from\s*["']node:https?["']/, 'no ES module import of node:http(s) left in the bundle');
  });

  it('loads with the worker environment and exports a handler function', async () => {
    // GIVEN the worker's environment
    Object.assign(process.env, WORKER_ENV);
    // WHEN the bundle is imported the way the runtime imports index.mjs
    const bundle = (await import(pathToFileURL(join(bundleDir, 'index.mjs')).href)) as { handler?: unknown };
    // THEN
    assert.equal(typeof bundle.handler, 'function');
  });

  it('each function bundles only what it uses: the read API carries no job code and no worker pipeline', () => {
    const sources = (dir: string) => (JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as { sources: string[] }).sources;
    const readApi = sources(readApiDir);
    assert.ok(readApi.some((source) => source.endsWith('workloads/accounts/entity.ts')), 'the entities it serves are in');
    assert.deepEqual(readApi.filter((source) => /\/jobs\/|shared\/batch\/|functions\/worker\/|\/local\//.test(source)), []);
  });
});
