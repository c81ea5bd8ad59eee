import { VARIANT_LABELS } from './variants/index.ts';
import type { BenchReport, Target } from './bench.ts';
import { FUNCTION_MEMORY_MB } from './bill.ts';

const fixed = (value: number, digits: number) => value.toFixed(digits);

/** A target's measure to two digits, rounded toward missing it: a hair under its bound never prints as the bound. */
function towardFailure(target: Target): string {
  // The epsilon keeps a measure exactly on a bound (1.2 × 100 is 120.00000000000001) on it.
  const hundredths = target.at === 'least' ? Math.floor(target.measured * 100 + 1e-9) : Math.ceil(target.measured * 100 - 1e-9);
  return fixed(hundredths / 100, 2);
}

/** The README's tables: the variants, the bundles, the targets. */
export function renderReport(report: BenchReport): string {
  const { options } = report;
  const crashPercent = `${fixed(options.crashRate * 100, 0)} %`;
  const lines = [
    `${options.credits + options.duplicates} records (${options.credits} credits over ${options.accounts} accounts + ${options.duplicates} producer duplicates), `
      + `batches of ${options.batchSize}, ${options.concurrency} concurrent invocations, one DynamoDB Local `
      + `${options.dynamodb === 'service' ? "behind the emulation of the service's transaction conflicts (`--dynamodb service`)" : 'as it is, where no transaction conflicts (`--dynamodb local`)'}; `
      + `${options.warmUp ? `each run's sandboxes warmed by ${options.warmUp} credits of their own first (\`--warm-up\`)` : 'sandboxes measured as they start (`--warm-up 0`)'}; `
      + `median of ${options.rounds} rounds (${report.machine}).`,
    '',
    `| variant | records/s | DynamoDB requests/record | item writes/record (refused or cancelled) | round trips in series/batch | conflicts / redeliveries per 100 records | p50 / p99 ms | CPU ms/record | machine CPU ms/record: DynamoDB Local + bench process (busy) | log bytes/record | over-applied | over-applied, ${crashPercent} crashes |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...report.summaries.map((s) => `| ${VARIANT_LABELS[s.variant]} | ${fixed(s.recordsPerSecond, 0)} | ${fixed(s.requestsPerRecord, 2)} (${Object.entries(s.requestsByCommand)
      .map(([command, n]) => `${command} ${fixed(n, 2)}`).join(', ')}) | ${fixed(s.itemWritesPerRecord, 2)} (${fixed(s.refusedItemWritesPerRecord, 2)}) | ${fixed(s.roundTripsInSeries, 2)} | ${fixed(s.conflictsPerRecord * 100, 1)} / ${fixed(s.redeliveriesPerRecord * 100, 1)} | ${fixed(s.p50Ms, 0)} / ${fixed(s.p99Ms, 0)} | ${fixed(s.cpuMsPerRecord, 2)} | ${fixed(s.machineCpuMsPerRecord.dynamodb, 2)} + ${fixed(s.machineCpuMsPerRecord.bench, 2)} (${fixed(s.machineBusy * 100, 0)} %) | ${fixed(s.logBytesPerRecord, 0)} | `
      + `${s.overApplied}${s.lost ? ` (lost ${s.lost})` : ''} | ${s.crash.overApplied}${s.crash.lost ? ` (lost ${s.crash.lost})` : ''} (${s.crash.crashes} crashes) |`),
    '',
    `What AWS would bill for a million such records (\`bill.ts\`: on-demand list prices, us-east-1, Lambda on Arm at ${FUNCTION_MEMORY_MB} MB; SQS left out, the same for every variant). `
      + 'DynamoDB\'s units are each request\'s cost by the service\'s billing rules, read from the request as sent (`capacity.ts`; a failed condition is billed too); '
      + 'Lambda\'s milliseconds are the invocations\' durations on this shared machine, longer than on AWS.',
    '',
    '| variant | Lambda ms/record (billed) | DynamoDB read / write units per record | write units of cancelled transactions per record | $ per million records: Lambda + DynamoDB = total | $ if cancelled transactions are billed |',
    '|---|---|---|---|---|---|',
    ...report.summaries.map((s) => `| ${VARIANT_LABELS[s.variant]} | ${fixed(s.billedMsPerRecord, 1)} | ${fixed(s.capacityUnitsPerRecord.read, 2)} / ${fixed(s.capacityUnitsPerRecord.write, 2)} `
      + `| ${fixed(s.capacityUnitsPerRecord.cancelledWrite, 2)} | ${fixed(s.bill.lambda, 2)} + ${fixed(s.bill.dynamodb, 2)} = ${fixed(s.bill.lambda + s.bill.dynamodb, 2)} `
      + `| ${fixed(s.bill.lambda + s.bill.dynamodb + s.bill.cancelled, 2)} |`),
    '',
    '| bundle (esbuild as the stack builds it) | index.mjs | of which tracing (API + shared/tracing) | source map | cold import | with `--enable-source-maps` |',
    '|---|---|---|---|---|---|',
    ...Object.values(report.bundles).map((b) => `| ${BUNDLE_LABELS[b.name] ?? b.name} | ${fixed(b.bytes / 1024, 0)} KB | ${fixed(b.tracingBytes / 1024, 1)} KB `
      + `| ${fixed(b.mapBytes / 1024, 0)} KB | ${fixed(b.coldImportMs, 0)} ms | ${fixed(b.coldImportSourceMapsMs, 0)} ms |`),
    '',
    '| target | measured | bound | |',
    '|---|---|---|---|',
    ...report.targets.map((t) => `| ${t.name} | ${towardFailure(t)} | ${t.at === 'least' ? '≥' : '≤'} ${t.bound} | ${t.met ? 'met' : '**missed**'} |`),
  ];
  return lines.join('\n');
}

const BUNDLE_LABELS: Record<string, string> = {
  ballast: 'ballast, the credit job (`workloads/accounts/bench/throughput/ballast-entry.ts`)',
  powertools: 'Powertools stack, the credit job (`workloads/accounts/bench/throughput/powertools-entry.ts`)',
  worker: 'ballast worker as deployed, every workload (`functions/worker`)',
  openTelemetryApi: "the OpenTelemetry API alone (`export * from '@opentelemetry/api'`), the tracing target's yardstick",
};

