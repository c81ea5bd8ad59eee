/**
 * `npm run chaos`: the arbiter of ballast's promises. The synthesized stack on the real engines
 * takes a seeded mix of jobs on shared, skewed accounts while every fault kind is injected at once;
 * after quiescence every invariant is checked and printed as a count that must be 0.
 *
 *   npm run chaos                              50,000 jobs, every fault at its default rate
 *   npm run chaos -- --jobs 2000 --seed 7      a small run
 *   npm run chaos -- --help                    every flag
 *
 * Writes bench/results/chaos.json and a Markdown table for the README. Exit code 0 when every
 * invariant is 0, 1 on a violation (the seed and the keys involved are printed), 2 on bad flags.
 */
import { writeFileSync } from 'node:fs';
import { numberFlag, scriptFlags } from '../flags.ts';
import { toolRegistry } from '../registry.ts';
import { formatAccess } from '../iam/authorizer.ts';
import { DEFAULT_FAULTS, runChaos, type ChaosProgress, type ChaosReport } from './run.ts';

const HELP = `npm run chaos -- [flags]
  --registry MODULE      the app's registry module (default: $BALLAST_REGISTRY; npm run chaos passes this repository's)
  --seed N               workload seed (default: 1); the same seed sends the same messages
  --jobs N               messages in the main phase (default 50000)
  --send-rate N          messages per second (default 60)
  --crash-after R        invocations crashing after their work (default ${DEFAULT_FAULTS.crashAfterWorkRate})
  --crash-before R       invocations crashing before their work (default ${DEFAULT_FAULTS.crashBeforeWorkRate})
  --crash-during R       invocations killed while their handler runs (default ${DEFAULT_FAULTS.crashDuringWorkRate})
  --timeout-rate R       invocations delayed past the timeout (default ${DEFAULT_FAULTS.timeoutRate})
  --dynamodb-rate R      DynamoDB requests answered by the fault proxy (default ${DEFAULT_FAULTS.dynamodbRate})
  --external-rate R      requests to the workloads' API fakes failing, slow, hung or answering non-objects (default ${DEFAULT_FAULTS.externalRate})
  --holder-stall R       the convoy's lock holders' heartbeats and commits held past the lease (default ${DEFAULT_FAULTS.holderStallRate})
  --reader-stall R       the read API's table reads answered late, past a hot item's next commit (default ${DEFAULT_FAULTS.readerStallRate})
  --redis-outage S       seconds Redis is down (restarted empty) (default ${DEFAULT_FAULTS.redisOutageMs / 1000})
  --no-redis-faults      skip the FLUSHALL, the CLIENT PAUSE and the outage
  --no-rollout           keep one worker version (by default a second one, with a longer lock lease, is rolled out, back and out again)
  --revoke G             take a grant away from every policy of the stack first: a statement's Sid or an action
                         (dynamodb:BatchGetItem); repeatable; the report counts the calls the local IAM refused
  --out FILE             JSON results (default bench/results/chaos.json)`;

const flags = scriptFlags({
  options: {
    help: { type: 'boolean', default: false },
    registry: { type: 'string' },
    seed: { type: 'string', default: '1' },
    jobs: { type: 'string', default: '50000' },
    'send-rate': { type: 'string', default: '60' },
    'crash-after': { type: 'string', default: String(DEFAULT_FAULTS.crashAfterWorkRate) },
    'crash-before': { type: 'string', default: String(DEFAULT_FAULTS.crashBeforeWorkRate) },
    'crash-during': { type: 'string', default: String(DEFAULT_FAULTS.crashDuringWorkRate) },
    'timeout-rate': { type: 'string', default: String(DEFAULT_FAULTS.timeoutRate) },
    'dynamodb-rate': { type: 'string', default: String(DEFAULT_FAULTS.dynamodbRate) },
    'external-rate': { type: 'string', default: String(DEFAULT_FAULTS.externalRate) },
    'holder-stall': { type: 'string', default: String(DEFAULT_FAULTS.holderStallRate) },
    'reader-stall': { type: 'string', default: String(DEFAULT_FAULTS.readerStallRate) },
    'redis-outage': { type: 'string', default: String(DEFAULT_FAULTS.redisOutageMs / 1000) },
    'no-redis-faults': { type: 'boolean', default: false },
    'no-rollout': { type: 'boolean', default: false },
    revoke: { type: 'string', multiple: true, default: [] },
    out: { type: 'string', default: new URL('../../bench/results/chaos.json', import.meta.url).pathname },
  },
}, HELP);
const number = (name: keyof typeof flags, min: number, max: number): number => numberFlag(flags[name], name, min, max);
const options = {
  registry: await toolRegistry(flags.registry),
  seed: Math.trunc(number('seed', 0, 2 ** 31)),
  jobs: Math.trunc(number('jobs', 10, 1_000_000)),
  sendRate: number('send-rate', 1, 10_000),
  revoke: flags.revoke as string[],
  faults: {
    crashAfterWorkRate: number('crash-after', 0, 0.5),
    crashBeforeWorkRate: number('crash-before', 0, 0.5),
    crashDuringWorkRate: number('crash-during', 0, 0.5),
    timeoutRate: number('timeout-rate', 0, 0.5),
    dynamodbRate: number('dynamodb-rate', 0, 0.5),
    externalRate: number('external-rate', 0, 0.9),
    holderStallRate: number('holder-stall', 0, 1),
    readerStallRate: number('reader-stall', 0, 1),
    redis: !flags['no-redis-faults'],
    redisOutageMs: number('redis-outage', 0, 600) * 1000,
    rollout: !flags['no-rollout'],
  },
};

const interactive = process.stdout.isTTY === true;
const log = (line: string) => process.stdout.write(`${interactive ? '\r\x1b[2K' : ''}${line}\n`);
let lastLineMs = 0;
const bar = (p: ChaosProgress) => {
  const width = 24;
  const done = Math.round((Math.min(p.sent, p.total) / Math.max(1, p.total)) * width);
  const line = `[${'#'.repeat(done)}${'.'.repeat(width - done)}] ${p.phase.padEnd(8)} sent ${p.sent}/${p.total} | processed ${p.processed} `
    + `| duplicates ${p.duplicates} | DLQ ${p.deadLettered} | faults injected ${p.faults} | violations so far ${p.violations}`;
  if (interactive) process.stdout.write(`\r\x1b[2K${line}`);
  else if (Date.now() - lastLineMs >= 10_000) {
    lastLineMs = Date.now();
    process.stdout.write(`${line}\n`);
  }
};

log(`chaos: seed ${options.seed}, ${options.jobs} jobs over the registered workloads, faults ${JSON.stringify(options.faults)}`);
const startedMs = Date.now();
const report = await runChaos({ ...options, onProgress: bar, log });
if (interactive) process.stdout.write('\n');
writeFileSync(flags.out, `${JSON.stringify({ date: new Date().toISOString(), durationSeconds: Math.round((Date.now() - startedMs) / 1000), ...report }, null, 2)}\n`);
printReport(report, Math.round((Date.now() - startedMs) / 1000));
const violations = Object.values(report.invariants.counts).reduce((a, b) => a + b, 0);
process.exit(violations === 0 ? 0 : 1);

function printReport(r: ChaosReport, seconds: number): void {
  log('');
  log(`chaos run: seed ${r.seed}, ${r.jobs} jobs on ${Object.entries(r.sizes).map(([what, n]) => `${n} ${what}`).join(', ')} in ${seconds} s (${r.jobsPerSecond} jobs/s while busy; phases ${Object.entries(r.phasesSeconds).map(([k, v]) => `${k} ${v} s`).join(', ')})`);
  log(`messages: ${Object.entries(r.messages).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  log(`faults injected: ${Object.entries(r.injected).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (r.rollout) log(`worker versions: ${Object.entries(r.rollout.leaseMs).map(([version, leaseMs]) => `${version} (lease ${leaseMs} ms) ran ${r.rollout?.invocations[version] ?? 0} invocations, processed ${r.rollout?.processed[version] ?? 0}`).join('; ')}`);
  log(formatAccess(r.access));
  log(`the functions' most frequent WARN and ERROR lines: ${Object.entries(r.functionLogs.counts).slice(0, 8).map(([k, v]) => `${k} ×${v}`).join('; ')}`);
  log(`replayed from the DLQ: ${r.replayed}; DLQ copies collapsed by the view: ${r.deadLetterCopiesCollapsed}; commits answered from screened records: ${r.invariants.screenedCommits}; records requeued behind a held lock: ${r.invariants.lockRequeues}`
    + `; stale holders' lock writes refused by their fence: ${r.invariants.fencedWrites ?? 'not watched'}; cache entries compared with the table: ${r.invariants.cacheEntriesCompared}`
    + `; readers' answers held to a finished invalidation: ${r.invariants.readsChecked ?? 'not checked'}`
    + `; reused keys refused as reused: ${r.invariants.keyReusesRefused} of ${r.messages['key-reuse'] ?? 0}`
    + `${r.invariants.keyReusesExcused ? ` (${r.invariants.keyReusesExcused} dead-lettered by the fault schedule first)` : ''}`);
  log('');
  log('| invariant | count |');
  log('|---|---|');
  for (const [name, text] of Object.entries(r.invariants.descriptions)) log(`| ${text} | **${r.invariants.counts[name] ?? 0}** |`);
  const bad = Object.entries(r.invariants.counts).filter(([, n]) => n > 0);
  if (bad.length === 0) {
    log('\nevery invariant holds: 0 violations');
    return;
  }
  log(`\nVIOLATIONS (replay with --seed ${r.seed}):`);
  for (const [name] of bad) {
    log(`  ${name}: ${(r.invariants.examples[name] ?? []).join('; ')}`);
    for (const [key, lines] of Object.entries(r.functionLogs.aboutViolations[name] ?? {})) {
      log(`    what the functions logged about ${key} (WARN and above):`);
      for (const line of lines) log(`      ${line}`);
    }
  }
}
