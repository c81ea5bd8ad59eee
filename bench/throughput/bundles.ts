import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type BuildOptions, type Metafile, type StdinOptions } from 'esbuild';
import { LAZY_BUILTIN_ALIASES } from '../../infra/constructs/bundling/lazy-builtins.ts';

/** What one build put out: `index.mjs` and its map, and what of it came from tracing. */
export interface BuiltBundle {
  /** Minified `index.mjs`, bytes. */
  readonly bytes: number;
  /** Its source map, bytes (without `sourcesContent`, as the stack ships it). */
  readonly mapBytes: number;
  /**
   * Of `bytes`, those from tracing: the OpenTelemetry packages (`node_modules/@opentelemetry/`) and
   * ballast's helpers over them (`shared/tracing/`), as esbuild's metafile counts them in the output.
   */
  readonly tracingBytes: number;
  /** Bytes in `index.mjs` by input, only the inputs that reached it (esbuild also lists those it shook out). */
  readonly inputs: Readonly<Record<string, number>>;
}

/** One Lambda entry built the way the stack builds its functions, and imported cold. */
export interface BundleMeasure extends Omit<BuiltBundle, 'inputs'> {
  readonly name: string;
  /** Median ms to import the bundle in a fresh Node process, without and with `--enable-source-maps`. */
  readonly coldImportMs: number;
  readonly coldImportSourceMapsMs: number;
  /** Every import's ms without source maps, one per round: rounds pair the bundles' imports. */
  readonly coldImportSamplesMs: readonly number[];
}

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * The entries compared: ballast and the Powertools stack running the same credit job, and
 * ballast's worker as deployed (every registered workload, the readiness probe), for reference.
 */
export const BUNDLE_ENTRIES = {
  ballast: join(ROOT, 'bench/throughput/ballast-entry.ts'),
  powertools: join(ROOT, 'bench/throughput/powertools-entry.ts'),
  // What the stack generates for this repository's registry (writeFunctionEntry).
  worker: {
    contents: [
      "import { workerHandler } from './functions/worker/index.ts';",
      "import { registry } from './workloads/registry.ts';",
      "import accounts from './workloads/accounts/jobs/index.ts';",
      "import inventory from './workloads/inventory/jobs/index.ts';",
      'export const handler = workerHandler(registry, [accounts, inventory]);',
    ].join('\n'),
    resolveDir: ROOT, sourcefile: 'worker-entry.ts', loader: 'ts',
  } satisfies StdinOptions,
} as const;

/**
 * The OpenTelemetry API alone, everything it exports: the size issue 16 bounds tracing's growth
 * by (on AWS the SDK comes from a layer, so the bundles carry only the API).
 */
export const OPENTELEMETRY_API_ENTRY: StdinOptions = {
  contents: "export * from '@opentelemetry/api';", resolveDir: ROOT, sourcefile: 'opentelemetry-api.ts', loader: 'ts',
};

type BundleName = keyof typeof BUNDLE_ENTRIES | 'openTelemetryApi';
const ENTRIES: Record<BundleName, string | StdinOptions> = { ...BUNDLE_ENTRIES, openTelemetryApi: OPENTELEMETRY_API_ENTRY };

/**
 * The options `BallastFunction` gives esbuild: ESM, node24, minified, source map without its
 * sources, nothing external, `node:http(s)` kept lazy, run from the project root (as the CDK runs it).
 */
const STACK_BUILD_OPTIONS = {
  absWorkingDir: ROOT, bundle: true, platform: 'node', format: 'esm', target: 'node24', minify: true, sourcemap: true, sourcesContent: false,
  mainFields: ['module', 'main'], logLevel: 'error', conditions: ['ballast-source'],
  banner: { js: "import { createRequire as __ballastCreateRequire } from 'node:module'; const require = __ballastCreateRequire(import.meta.url);" },
  alias: { ...LAZY_BUILTIN_ALIASES },
} satisfies BuildOptions;

/**
 * Builds `entry`, a file or the source of one, with the stack's options to `outfile`, which is
 * written unless `write` is false, and measures what came out.
 */
export async function buildLikeTheStack(entry: string | StdinOptions, outfile: string, write = true): Promise<BuiltBundle> {
  const result = await build({
    ...STACK_BUILD_OPTIONS, ...(typeof entry === 'string' ? { entryPoints: [entry] } : { stdin: entry }), outfile, write, metafile: true,
  });
  return measureBuild(result.metafile);
}

const isTracingInput = (path: string) => path.includes('node_modules/@opentelemetry/') || path.startsWith('shared/tracing/');

/**
 * Sizes from a one-entry build's metafile (input paths relative to the project root, the build's
 * working directory): the `.mjs` output, its `.map`, and the `.mjs`'s bytes by input.
 */
export function measureBuild(metafile: Metafile): BuiltBundle {
  const outputs = Object.entries(metafile.outputs);
  const code = outputs.find(([path]) => path.endsWith('.mjs'));
  if (!code) throw new Error(`no .mjs among the build's outputs: ${outputs.map(([path]) => path).join(', ')}`);
  const inputs = Object.fromEntries(Object.entries(code[1].inputs)
    .filter(([, input]) => input.bytesInOutput > 0).map(([path, input]) => [path, input.bytesInOutput]));
  return {
    bytes: code[1].bytes,
    mapBytes: outputs.find(([path]) => path.endsWith('.mjs.map'))?.[1].bytes ?? 0,
    tracingBytes: Object.entries(inputs).reduce((sum, [path, bytes]) => sum + (isTracingInput(path) ? bytes : 0), 0),
    inputs,
  };
}

/** The environment both need at import (config is read at cold start); nothing is called. */
const IMPORT_ENV = {
  STATE_TABLE_NAME: 'state', CONTROL_TABLE_NAME: 'control', DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:9/dlq', WORKER_VERSION: 'bench',
  PARTNER_API_URL: 'http://127.0.0.1:9', CARRIER_API_URL: 'http://127.0.0.1:9', AWS_REGION: 'us-east-1',
  AWS_LAMBDA_FUNCTION_NAME: 'bench', POWERTOOLS_DEV: 'false',
};

/**
 * Builds each entry, and the OpenTelemetry API alone, like the stack (`buildLikeTheStack`), then
 * imports each in fresh processes, alternating, `imports` times.
 */
export async function measureBundles(imports: number): Promise<Record<BundleName, BundleMeasure>> {
  const dir = mkdtempSync(join(tmpdir(), 'ballast-bundles-'));
  try {
    const names = Object.keys(ENTRIES) as BundleName[];
    const files = Object.fromEntries(names.map((name) => [name, join(dir, name, 'index.mjs')])) as Record<BundleName, string>;
    const built = {} as Record<BundleName, BuiltBundle>;
    for (const name of names) built[name] = await buildLikeTheStack(ENTRIES[name], files[name]);
    const times = Object.fromEntries(names.map((name) => [name, { plain: [] as number[], maps: [] as number[] }])) as Record<BundleName, { plain: number[]; maps: number[] }>;
    for (let round = 0; round < imports; round += 1) {
      // Rotated, so no entry always runs first (or right after a given other).
      for (const name of names.map((_, i) => names[(i + round) % names.length] as BundleName)) {
        times[name].plain.push(importMs(files[name], false));
        times[name].maps.push(importMs(files[name], true));
      }
    }
    const measure = (name: BundleName): BundleMeasure => ({
      name, bytes: built[name].bytes, mapBytes: built[name].mapBytes, tracingBytes: built[name].tracingBytes,
      coldImportMs: median(times[name].plain), coldImportSourceMapsMs: median(times[name].maps), coldImportSamplesMs: times[name].plain,
    });
    return { ballast: measure('ballast'), powertools: measure('powertools'), worker: measure('worker'), openTelemetryApi: measure('openTelemetryApi') };
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

/**
 * The median over rounds of `a`'s import time ÷ `b`'s in the same round: as for records/s, a slow
 * second of a noisy machine then hits both sides of a ratio, where the ratio of two medians taken
 * apart moved by ±10 % from run to run.
 */
export function coldImportRatio(a: BundleMeasure, b: BundleMeasure): number {
  return median(a.coldImportSamplesMs.map((ms, round) => ms / (b.coldImportSamplesMs[round] as number)));
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
