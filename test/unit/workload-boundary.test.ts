/**
 * The framework knows no workload: no file under shared/, functions/, infra/, cli/ or local/
 * imports workloads/ or uses a registered workload's vocabulary (its domain words). The app hands
 * its registry in (the stack's `registry`, `ballast dev`, the CLI's `--registry`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineEntity } from '../../shared/cache/index.ts';
import {
  defineJobs, defineRegistry, defineWorkload, workloadCatalog, workloadEntities, workloadJobs, workloadReasons, workloadSettings, type Workload,
} from '../../shared/workloads/index.ts';
import type { JobHandler } from '../../shared/batch/index.ts';
import { WORKLOADS } from '../../workloads/registry.ts';
import { workerConfigFromEnv } from '../../functions/worker/config.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const FRAMEWORK = ['shared', 'functions', 'infra', 'cli', 'local'];

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (path.endsWith('.ts')) yield path;
  }
}

/** `file → the workloads whose vocabulary it uses`. */
function knowing(workloads: readonly Workload[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const dir of FRAMEWORK) {
    for (const file of sources(join(root, dir))) {
      const text = readFileSync(file, 'utf8');
      const names = workloads.filter((workload) => (workload.vocabulary ?? []).some((word) => word.test(text))).map((workload) => workload.name);
      if (names.length > 0) found.set(relative(root, file), names);
    }
  }
  return found;
}

describe('workload boundary: the framework knows no workload', () => {
  const found = knowing(WORKLOADS);

  it('no framework file imports a workload (the registry is injected)', () => {
    const workloads = join(root, 'workloads');
    const importing = FRAMEWORK.flatMap((dir) => [...sources(join(root, dir))]).filter((file) => [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)]
      .some(([, specifier]) => resolve(dirname(file), specifier as string).startsWith(`${workloads}/`)))
      .map((file) => relative(root, file));
    assert.deepEqual(importing, [], 'take the registry as an argument (BallastStack props, a handler factory, --registry), not by import');
  });

  it('no framework file uses a workload\'s words', () => {
    const offenders = [...found].map(([file, names]) => `${file} (${names.join(', ')})`);
    assert.deepEqual(offenders, [], 'move the domain code into its workload under workloads/, or make the framework code generic');
  });

  it('every workload\'s vocabulary finds its own code (so a framework file using it would be caught)', () => {
    for (const workload of WORKLOADS) {
      const own = [...sources(join(root, 'workloads', workload.name))].filter((file) => (workload.vocabulary ?? []).some((word) => word.test(readFileSync(file, 'utf8'))));
      assert.ok(own.length >= 3, `${workload.name}: its vocabulary matches only ${own.length} of its own files`);
    }
  });
});

describe('workload registry', () => {
  const PAYLOAD = z.object({});
  const job = (type: string, payload: z.ZodType = PAYLOAD) => ({ type, payload }) as unknown as JobHandler;
  const workload = (name: string, types: string[], settings: string[] = []) =>
    defineWorkload({ name, settings, jobTypes: Object.fromEntries(types.map((type) => [type, { payload: PAYLOAD }])), jobs: `/${name}/jobs.ts` });
  const handlers = (w: Workload, ...types: string[]) => defineJobs(w, () => types.map((type) => job(type)));
  const runtime = { stateTableName: 't', setting: () => '', documents: {} as never };

  it('gives the worker every registered workload\'s job types, each owned once', () => {
    const [a, b] = [workload('a', ['a.x', 'a.y']), workload('b', ['b.x'])];
    const jobs = workloadJobs([a, b], [handlers(a, 'a.x', 'a.y'), handlers(b, 'b.x')], runtime);
    assert.deepEqual(jobs.map((handler) => handler.type), ['a.x', 'a.y', 'b.x']);
    const [a1, b1] = [workload('a', ['a.x']), workload('b', ['a.x'])];
    assert.throws(() => workloadJobs([a1, b1], [handlers(a1, 'a.x'), handlers(b1, 'a.x')], runtime), /job type a\.x is registered by both a and b/);
    assert.throws(() => workloadCatalog([a1, b1]), /job type a\.x is declared by both a and b/);
    assert.throws(() => workloadJobs([a], [], runtime), /workload a: no handlers given; its jobs module must `export default defineJobs\(a, \.\.\.\)`/);
    assert.deepEqual(Object.keys(workloadCatalog([workload('a', ['a.x']), workload('b', ['b.x'])])), ['a.x', 'b.x']);
  });

  it('keeps producers and the worker on one schema: every declared type has its handler, with the declared schema', () => {
    const a = defineWorkload({ name: 'a', jobTypes: { 'a.x': { payload: PAYLOAD } }, jobs: '/a/jobs.ts' });
    const given = (...jobs: JobHandler[]) => [defineJobs(a, () => jobs)];
    assert.throws(() => workloadJobs([a], given(job('a.x'), job('a.y')), runtime), /workload a: handler of a\.y, which its jobTypes do not declare/);
    assert.throws(() => workloadJobs([a], given(), runtime), /workload a: no handler for a\.x/);
    assert.throws(() => workloadJobs([a], given(job('a.x', z.object({}))), runtime), /the handler of a\.x validates with another schema/);
  });

  it('refuses a malformed name, and a registry with a workload twice or not from its module\'s URL', () => {
    assert.throws(() => workload('Orders', []), /workload name 'Orders' must be lowercase/);
    assert.throws(() => defineRegistry(import.meta.url, [workload('a', []), workload('a', [])]), /workload a is registered twice/);
    assert.throws(() => defineRegistry('./registry.ts', [workload('a', [])]), /pass the registry module's import\.meta\.url/);
    const registry = defineRegistry(import.meta.url, [workload('a', ['a.x'])]);
    assert.equal(registry.module, fileURLToPath(import.meta.url));
    assert.deepEqual(Object.keys(registry.catalog), ['a.x']);
  });

  it('takes each workload\'s own reasons, refusing a malformed one, a framework one, or one declared twice', () => {
    const withReasons = (name: string, codes: string[]) => defineWorkload({ name, jobTypes: {}, jobs: '/x.ts', reasons: codes.map((code) => ({ code })) });
    assert.deepEqual(workloadReasons([withReasons('a', ['out-of-stock']), withReasons('b', ['carrier-rejected'])]).map((r) => r.code), ['out-of-stock', 'carrier-rejected']);
    assert.throws(() => withReasons('a', ['Out of stock']), /reason 'Out of stock' must be lowercase words joined by hyphens/);
    assert.throws(() => withReasons('a', ['lock-busy']), /reason 'lock-busy' is the framework's own/);
    assert.throws(() => workloadReasons([withReasons('a', ['x-refused']), withReasons('b', ['x-refused'])]), /reason x-refused is declared by both a and b/);
    assert.throws(() => defineRegistry(import.meta.url, [withReasons('a', ['x-refused']), withReasons('b', ['x-refused'])]), /reason x-refused is declared by both a and b/);
  });

  it('the worker requires every setting a registered workload declares, naming it', () => {
    const env = { STATE_TABLE_NAME: 's', CONTROL_TABLE_NAME: 'c', DEAD_LETTER_QUEUE_URL: 'q', WORKER_VERSION: 'v' };
    const workloads = [workload('a', [], ['A_URL']), workload('b', [], ['A_URL', 'B_URL'])];
    assert.deepEqual(workloadSettings(workloads), ['A_URL', 'B_URL']);
    assert.throws(() => workerConfigFromEnv(env, workloads), /worker configuration: A_URL is required; B_URL is required/);
    assert.deepEqual(workerConfigFromEnv({ ...env, A_URL: 'https://a', B_URL: 'https://b' }, workloads).settings, { A_URL: 'https://a', B_URL: 'https://b' });
  });

  it('gives the cache every registered workload\'s entities, refusing a name or a route claimed twice', () => {
    const entity = (name: string, route?: string) => defineEntity({ name, schemaVersion: 1, schema: z.object({ version: z.number() }), ...(route ? { route } : {}) });
    const withEntities = (name: string, ...entities: ReturnType<typeof entity>[]) => defineWorkload({ name, jobTypes: {}, jobs: '/x.ts', entities });
    assert.deepEqual(workloadEntities([withEntities('a', entity('order', 'orders')), withEntities('b', entity('sku'))]).map((e) => e.name), ['order', 'sku']);
    assert.throws(() => workloadEntities([withEntities('a', entity('order')), withEntities('b', entity('order'))]), /cached entity order is declared by both a and b/);
    assert.throws(() => workloadEntities([withEntities('a', entity('order', 'x')), withEntities('b', entity('sku', 'x'))]), /read route \/x is declared by both a and b/);
    assert.throws(() => defineRegistry(import.meta.url, [withEntities('a', entity('order', 'x')), withEntities('b', entity('sku', 'x'))]), /read route \/x is declared by both a and b/);
  });
});
