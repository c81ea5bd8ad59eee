import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

/** One Lambda entry built the way the stack builds its functions. */
export interface BundleMeasure {
  readonly name: string;
  /** Minified `index.mjs`, bytes. */
  readonly bytes: number;
  /** Its source map, bytes (without `sourcesContent`, as the stack ships it). */
  readonly mapBytes: number;
  /** Median ms to import the bundle in a fresh Node process, without and with `--enable-source-maps`. */
  readonly coldImportMs: number;
  readonly coldImportSourceMapsMs: number;
}

const ROOT = new URL('../../../../', import.meta.url).pathname;

/**
 * The entries compared: ballast and the Powertools stack running the same credit job, and
 * ballast's worker as deployed (every registered workload, the readiness probe), for reference.
 */
export const BUNDLE_ENTRIES = {
  ballast: join(ROOT, 'workloads/accounts/bench/throughput/ballast-entry.ts'),
  powertools: join(ROOT, 'workloads/accounts/bench/throughput/powertools-entry.ts'),
  worker: join(ROOT, 'functions/worker/index.ts'),
} as const;
type BundleName = keyof typeof BUNDLE_ENTRIES;

/** The environment both need at import (config is read at cold start); nothing is called. */
const IMPORT_ENV = {
  STATE_TABLE_NAME: 'state', CONTROL_TABLE_NAME: 'control', DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:9/dlq', WORKER_VERSION: 'bench',
  PARTNER_API_URL: 'http://127.0.0.1:9', CARRIER_API_URL: 'http://127.0.0.1:9', AWS_REGION: 'us-east-1',
  AWS_LAMBDA_FUNCTION_NAME: 'bench', POWERTOOLS_DEV: 'false',
};

/**
 * Builds each entry with the options `BallastFunction` gives esbuild (ESM, node24, minified, source
 * map, nothing external), then imports each in fresh processes, alternating, `imports` times.
 */
export async function measureBundles(imports: number): Promise<Record<BundleName, BundleMeasure>> {
  const dir = mkdtempSync(join(tmpdir(), 'ballast-bundles-'));
  try {
    const files = {} as Record<BundleName, string>;
    for (const [name, entry] of Object.entries(BUNDLE_ENTRIES) as [BundleName, string][]) {
      const outfile = join(dir, name, 'index.mjs');
      await build({
        entryPoints: [entry], outfile, bundle: true, platform: 'node', format: 'esm', target: 'node24', minify: true, sourcemap: true, sourcesContent: false,
        mainFields: ['module', 'main'], logLevel: 'error',
        banner: { js: "import { createRequire as __ballastCreateRequire } from 'node:module'; const require = __ballastCreateRequire(import.meta.url);" },
      });
      files[name] = outfile;
    }
    const names = Object.keys(BUNDLE_ENTRIES) as BundleName[];
    const times = Object.fromEntries(names.map((name) => [name, { plain: [] as number[], maps: [] as number[] }])) as Record<BundleName, { plain: number[]; maps: number[] }>;
    for (let round = 0; round < imports; round += 1) {
      // Rotated, so no entry always runs first (or right after a given other).
      for (const name of names.map((_, i) => names[(i + round) % names.length] as BundleName)) {
        times[name].plain.push(importMs(files[name], false));
        times[name].maps.push(importMs(files[name], true));
      }
    }
    const measure = (name: BundleName): BundleMeasure => ({
      name, bytes: statSync(files[name]).size, mapBytes: statSync(`${files[name]}.map`).size,
      coldImportMs: median(times[name].plain), coldImportSourceMapsMs: median(times[name].maps),
    });
    return { ballast: measure('ballast'), powertools: measure('powertools'), worker: measure('worker') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function importMs(file: string, sourceMaps: boolean): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  const child = spawnSync(process.execPath, [...(sourceMaps ? ['--enable-source-maps'] : []), '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, ...IMPORT_ENV }, encoding: 'utf8', timeout: 60_000,
  });
  if (child.status !== 0) throw new Error(`importing ${file} failed: ${child.stderr}`);
  return Number(child.stdout);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
