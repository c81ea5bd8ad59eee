import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
const entries: Record<string, string> = { ballast: 'workloads/accounts/bench/throughput/ballast-entry.ts', powertools: 'workloads/accounts/bench/throughput/powertools-entry.ts', zodEnv: 'z1.tmp.ts', zodMini: 'z2.tmp.ts', empty: 'z3.tmp.ts' };
for (const [n, e] of Object.entries(entries)) await build({ entryPoints: [e], outfile: `/tmp/cold/${n}/index.mjs`, bundle: true, platform: 'node', format: 'esm', target: 'node24', minify: true, mainFields: ['module', 'main'], logLevel: 'error', banner: { js: "import { createRequire as __c } from 'node:module'; const require = __c(import.meta.url);" } });
const env = { PATH: process.env.PATH, STATE_TABLE_NAME: 's', CONTROL_TABLE_NAME: 'c', DEAD_LETTER_QUEUE_URL: 'http://x', WORKER_VERSION: 'b', AWS_REGION: 'us-east-1', AWS_LAMBDA_FUNCTION_NAME: 'b' };
const t: Record<string, number[]> = {};
for (let i = 0; i < 15; i++) for (const n of Object.keys(entries)) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const t=performance.now(); await import('/tmp/cold/${n}/index.mjs'); process.stdout.write(String(performance.now()-t))`], { env, encoding: 'utf8' });
  (t[n] ??= []).push(Number(r.stdout));
}
for (const [n, v] of Object.entries(t)) { v.sort((a, b) => a - b); console.log(n, v[7]!.toFixed(1)); }
