/**
 * `npm run bench:throughput`: per-record cost of ballast against a bare handler, a hand-written
 * transaction and the AWS Powertools stack, side by side in one run on one DynamoDB Local, driven
 * by the local cloud's own SQS event source mapping over a real SQS emulator; then the same traffic
 * with crashes after the effect; then the bundles and their cold imports. Prints Markdown tables
 * and the targets, writes bench/results/throughput.json.
 *
 *   npm run bench:throughput                        the README's run
 *   npm run bench:throughput -- --help              every flag
 *
 * Exit code: 0 when ballast meets every target, 1 when it misses one, 2 on bad flags.
 */
import { numberFlag, scriptFlags } from '../../local/flags.ts';
import { writeFileSync } from 'node:fs';
import { runThroughputBench, type BenchOptions } from './bench.ts';
import { renderReport } from './report.ts';

const HELP = `npm run bench:throughput -- [flags]
  --credits N        account.credit jobs (default 2000)
  --accounts N       accounts they spread over (default 50)
  --duplicates N     of those sent twice by the producer (default 200)
  --batch-size N     records per invocation (default 10)
  --concurrency N    invocations at once, the mapping's maximum concurrency (default 4)
  --rounds N         measured rounds, every variant once per round, order rotated (default 5)
  --warm-up N        credits each run's sandboxes take first, on accounts of their own, before the
                     measured traffic (default 2000; 0: measure sandboxes as they start)
  --crash-rate R     per effect: the sandbox dies right after its state-table write, in the crash run (default 0.02)
  --imports N        cold imports per bundle, the bundles alternating (default 21)
  --seed N           traffic seed (default 1)
  --dynamodb MODE    service: DynamoDB Local behind the emulation of the service's transaction
                     conflicts (default); local: DynamoDB Local as it is, where none conflicts
  --out FILE         JSON results (default bench/results/throughput.json)`;

const flags = scriptFlags({
  options: {
    help: { type: 'boolean', default: false },
    credits: { type: 'string', default: '2000' },
    accounts: { type: 'string', default: '50' },
    duplicates: { type: 'string', default: '200' },
    'batch-size': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' },
    'warm-up': { type: 'string', default: '2000' },
    'crash-rate': { type: 'string', default: '0.02' },
    imports: { type: 'string', default: '21' },
    seed: { type: 'string', default: '1' },
    dynamodb: { type: 'string', default: 'service' },
    out: { type: 'string', default: new URL('../results/throughput.json', import.meta.url).pathname },
  },
}, HELP);
const number = (name: keyof typeof flags, min: number, max: number, integer = true): number => numberFlag(flags[name], name, min, max, integer);
const options: BenchOptions = {
  credits: number('credits', 10, 1_000_000),
  accounts: number('accounts', 1, 100_000),
  duplicates: number('duplicates', 0, 1_000_000),
  batchSize: number('batch-size', 1, 10),
  concurrency: number('concurrency', 1, 64),
  rounds: number('rounds', 1, 50),
  warmUp: number('warm-up', 0, 1_000_000),
  crashRate: number('crash-rate', 0, 0.5, false),
  imports: number('imports', 1, 200),
  seed: number('seed', 0, 2 ** 31),
  dynamodb: flags.dynamodb === 'local' ? 'local' : 'service',
};
if (flags.dynamodb !== 'local' && flags.dynamodb !== 'service') {
  process.stderr.write(`--dynamodb must be service or local, got '${flags.dynamodb}'\n`);
  process.exit(2);
}
if (options.duplicates > options.credits) {
  process.stderr.write(`--duplicates (${options.duplicates}) cannot exceed --credits (${options.credits})\n`);
  process.exit(2);
}

const report = await runThroughputBench(options, (line) => process.stderr.write(`${line}\n`));
writeFileSync(flags.out, `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(`${renderReport(report)}\n`);
process.stderr.write(`results written to ${flags.out}\n`);
process.exit(report.targets.every((target) => target.met) ? 0 : 1);
