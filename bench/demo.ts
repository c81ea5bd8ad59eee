/**
 * `npm run bench:demo`: the full `npm start` demo (3,000 jobs over a minute) as a new user runs it,
 * timed from launch: engines up, stack up, demo complete, and the summary it prints. Writes
 * bench/results/demo.json and prints a Markdown table for the README.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../cli/bin/ballast.ts', import.meta.url));
const startedAtMs = Date.now();
const marks: { enginesReadySeconds?: number; stackReadySeconds?: number; demoCompleteSeconds?: number } = {};
let output = '';
const child = spawn(process.execPath, [cli, 'dev', '--jobs', '3000', '--duration', '60', '--exit-after-demo'], { stdio: ['ignore', 'pipe', 'inherit'] });
child.stdout.on('data', (chunk: Buffer) => {
  output += chunk.toString('utf8');
  const mark = (name: keyof typeof marks, pattern: RegExp) => {
    if (!(name in marks) && pattern.test(output)) marks[name] = (Date.now() - startedAtMs) / 1000;
  };
  mark('enginesReadySeconds', /redis\s+redis:\/\//);
  mark('stackReadySeconds', /is running locally/);
  mark('demoCompleteSeconds', /demo complete/);
});
const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
const field = (pattern: RegExp) => pattern.exec(output)?.[1] ?? '';
const result = {
  date: new Date().toISOString(),
  exitCode: code,
  ...marks,
  accounted: field(/demo complete: (\d+ of \d+) jobs accounted for/),
  // The summary lines (indented), not the live progress lines that use the same words.
  processed: field(/^  processed\s+(\d+)$/m),
  duplicates: field(/^  duplicates\s+(\d+) suppressed$/m),
  deadLetters: field(/^  DLQ\s+(.*)$/m),
  cacheHitRatio: field(/^  reads .*cache hit ratio ([\d.]+%)$/m),
  invalidationLag: field(/^  invalidation lag (p50 .*)$/m),
};
writeFileSync(new URL('./results/demo.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
console.log('| engines up | stack up | demo complete | accounted | processed | duplicates | dead-lettered | cache hits | invalidation lag |');
console.log('|---|---|---|---|---|---|---|---|---|');
console.log(`| ${result.enginesReadySeconds ?? '-'} s | ${result.stackReadySeconds ?? '-'} s | ${result.demoCompleteSeconds ?? '-'} s | ${result.accounted} | ${result.processed} | ${result.duplicates} | ${result.deadLetters} | ${result.cacheHitRatio} | ${result.invalidationLag} |`);
process.exit(code === 0 && result.demoCompleteSeconds !== undefined ? 0 : 1);
