import { cpus } from 'node:os';
import { startDynamoDb, startSqs } from '../../local/engines/index.ts';
import { startDynamoDbFaultProxy, type DynamoDbFaultProxy } from '../../local/faults/index.ts';
import { billPerMillionRecords, FUNCTION_MEMORY_MB, type Bill } from './bill.ts';
import { coldImportRatio, measureBundles, median, type BundleMeasure } from './bundles.ts';
import { runVariant, type RunResult } from './run.ts';
import { VARIANTS, type VariantName } from './variants/index.ts';
import { creditTraffic } from './workload.ts';

export interface BenchOptions {
  readonly credits: number;
  readonly accounts: number;
  readonly duplicates: number;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly rounds: number;
  readonly crashRate: number;
  readonly imports: number;
  readonly seed: number;
  /**
   * Credits each run's sandboxes take first, on accounts of their own and with the same share of
   * producer duplicates, before the measured traffic (not in the crash runs): records/s and CPU
   * are a warm sandbox's. 0 measures sandboxes as they start, JIT compilation and all.
   */
  readonly warmUp: number;
  /**
   * What the variants write to: `service`, DynamoDB Local behind the fault proxy's emulation of the
   * service's transaction conflicts (two transactions on one item at once: the later is cancelled),
   * or `local`, DynamoDB Local as it is (it runs them one after the other).
   */
  readonly dynamodb: 'service' | 'local';
}

/** A variant's numbers over the measured rounds: the median of each. */
export interface VariantSummary {
  readonly variant: VariantName;
  readonly recordsPerSecond: number;
  readonly requestsPerRecord: number;
  /** Requests per record, by DynamoDB command. */
  readonly requestsByCommand: Record<string, number>;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerRecord: number;
  /** The machine's CPU per record: DynamoDB Local's, and the bench process's (see `RunResult`). */
  readonly machineCpuMsPerRecord: RunResult['machineCpuMsPerRecord'];
  readonly machineBusy: number;
  /** DynamoDB round trips in series per invocation. */
  readonly roundTripsInSeries: number;
  /** Item writes asked for per record, and those DynamoDB refused or cancelled. */
  readonly itemWritesPerRecord: number;
  readonly refusedItemWritesPerRecord: number;
  readonly logBytesPerRecord: number;
  /** Worst over the rounds: any round's over-application counts. */
  readonly overApplied: number;
  readonly lost: number;
  /** Requests refused for meeting a transaction in progress, per record. */
  readonly conflictsPerRecord: number;
  readonly redeliveriesPerRecord: number;
  /** Invocations' billed milliseconds per record, as measured here (see `RunResult`). */
  readonly billedMsPerRecord: number;
  readonly capacityUnitsPerRecord: RunResult['capacityUnitsPerRecord'];
  /** Dollars per million records at list prices (`bill.ts`), from the medians above. */
  readonly bill: Bill;
  /** The crash run. */
  readonly crash: RunResult;
}

export interface Target {
  readonly name: string;
  readonly measured: number;
  readonly bound: number;
  readonly at: 'least' | 'most';
  readonly met: boolean;
}

export interface BenchReport {
  readonly date: string;
  readonly machine: string;
  readonly options: BenchOptions;
  readonly summaries: readonly VariantSummary[];
  readonly rounds: readonly (readonly RunResult[])[];
  readonly bundles: Record<string, BundleMeasure>;
  readonly targets: readonly Target[];
}

const NAMES = Object.keys(VARIANTS) as VariantName[];

/**
 * One warm-up round (DynamoDB Local's JIT and the sandboxes' need it; discarded), `rounds`
 * measured rounds with the variants' order rotated, one crash run per variant, then the bundles.
 * Ratios are taken within a round, then their median, so a slow minute of a noisy machine hits
 * both sides of a ratio.
 */
export async function runThroughputBench(options: BenchOptions, log: (line: string) => void): Promise<BenchReport> {
  const traffic = creditTraffic({ credits: options.credits, accounts: options.accounts, duplicates: options.duplicates, seed: options.seed });
  const warmUp = options.warmUp === 0 ? undefined : creditTraffic({
    credits: options.warmUp, accounts: options.accounts, duplicates: Math.round((options.warmUp * options.duplicates) / options.credits), seed: options.seed + 1, namespace: 'warm-up',
  });
  const dynamodb = await startDynamoDb();
  const sqs = await startSqs();
  const service: DynamoDbFaultProxy | undefined = options.dynamodb === 'service'
    ? await startDynamoDbFaultProxy({ target: dynamodb.endpoint, transactionConflicts: true })
    : undefined;
  log(`engines: DynamoDB Local at ${dynamodb.endpoint} (pid ${dynamodb.pid}), fauxqs at ${sqs.endpoint}`);
  log(service
    ? `DynamoDB as the service behaves: the variants reach it through ${service.endpoint}, which cancels a transaction meeting another one in progress on an item`
    : 'DynamoDB as DynamoDB Local behaves: overlapping transactions on one item run one after the other, none conflicts');
  log(`traffic: ${traffic.bodies.length} records (${options.credits} credits over ${options.accounts} accounts + ${options.duplicates} producer duplicates), batches of ${options.batchSize}, ${options.concurrency} concurrent invocations`
    + `${warmUp ? `, after ${warmUp.bodies.length} warm-up records in the same sandboxes` : ', on sandboxes that start cold'}`);
  let run = 0;
  const once = async (variant: VariantName, crashRate: number, label: string) => {
    run += 1;
    const result = await runVariant({
      variant, traffic, dynamodb, service, sqs, prefix: `bench${run}`, batchSize: options.batchSize, concurrency: options.concurrency,
      timeoutMs: 6_000, crashRate, maxRunMs: 600_000, warmUp: crashRate === 0 ? warmUp : undefined,
    });
    log(`${label.padEnd(10)} ${variant.padEnd(12)} ${result.recordsPerSecond.toFixed(0).padStart(5)} records/s  ${result.cpuMsPerRecord.toFixed(2)} CPU ms/record  `
      + `DynamoDB Local ${result.machineCpuMsPerRecord.dynamodb.toFixed(2)} + bench process ${result.machineCpuMsPerRecord.bench.toFixed(2)} CPU ms/record (machine ${(result.machineBusy * 100).toFixed(0)} % busy)  `
      + `${result.requestsPerRecord.toFixed(2)} requests/record  ${result.itemWritesPerRecord.toFixed(2)} item writes/record (${result.refusedItemWritesPerRecord.toFixed(2)} refused)  `
      + `${result.roundTripsInSeries.toFixed(2)} in series/batch  conflicts ${result.conflicts}  redeliveries ${result.redeliveries}  over-applied ${result.overApplied}${result.crashes ? `  crashes ${result.crashes}` : ''}`);
    return result;
  };
  const rounds: RunResult[][] = [];
  const crashes = new Map<VariantName, RunResult>();
  try {
    for (const variant of NAMES) await once(variant, 0, 'warm-up');
    for (let round = 0; round < options.rounds; round += 1) {
      const order = NAMES.map((_, i) => NAMES[(i + round) % NAMES.length] as VariantName);
      const results: RunResult[] = [];
      for (const variant of order) results.push(await once(variant, 0, `round ${round + 1}`));
      rounds.push(results);
    }
    for (const variant of NAMES) crashes.set(variant, await once(variant, options.crashRate, `crash ${options.crashRate}`));
  } finally {
    await service?.stop();
    await sqs.stop();
    await dynamodb.stop();
  }
  log(`bundles: building and importing each ${options.imports} times`);
  const bundles = await measureBundles(options.imports);

  const of = (variant: VariantName) => rounds.map((results) => results.find((r) => r.variant === variant) as RunResult);
  const summaries = NAMES.map((variant): VariantSummary => {
    const runs = of(variant);
    const commands = [...new Set(runs.flatMap((r) => Object.keys(r.requests)))].sort();
    const capacityUnitsPerRecord = {
      read: median(runs.map((r) => r.capacityUnitsPerRecord.read)),
      write: median(runs.map((r) => r.capacityUnitsPerRecord.write)),
      cancelledWrite: median(runs.map((r) => r.capacityUnitsPerRecord.cancelledWrite)),
    };
    const billedMsPerRecord = median(runs.map((r) => r.billedMsPerRecord));
    return {
      variant,
      recordsPerSecond: median(runs.map((r) => r.recordsPerSecond)),
      requestsPerRecord: median(runs.map((r) => r.requestsPerRecord)),
      requestsByCommand: Object.fromEntries(commands.map((c) => [c.replace(/Command$/, ''), median(runs.map((r) => (r.requests[c] ?? 0) / r.records))])),
      p50Ms: median(runs.map((r) => r.latencyMs.p50)),
      p99Ms: median(runs.map((r) => r.latencyMs.p99)),
      cpuMsPerRecord: median(runs.map((r) => r.cpuMsPerRecord)),
      machineCpuMsPerRecord: { dynamodb: median(runs.map((r) => r.machineCpuMsPerRecord.dynamodb)), bench: median(runs.map((r) => r.machineCpuMsPerRecord.bench)) },
      machineBusy: median(runs.map((r) => r.machineBusy)),
      roundTripsInSeries: median(runs.map((r) => r.roundTripsInSeries)),
      itemWritesPerRecord: median(runs.map((r) => r.itemWritesPerRecord)),
      refusedItemWritesPerRecord: median(runs.map((r) => r.refusedItemWritesPerRecord)),
      logBytesPerRecord: median(runs.map((r) => r.logBytesPerRecord)),
      overApplied: Math.max(...runs.map((r) => r.overApplied)),
      lost: Math.max(...runs.map((r) => r.lost)),
      conflictsPerRecord: median(runs.map((r) => r.conflicts / r.records)),
      redeliveriesPerRecord: median(runs.map((r) => r.redeliveries / r.records)),
      billedMsPerRecord,
      capacityUnitsPerRecord,
      bill: billPerMillionRecords({
        lambdaMsPerRecord: billedMsPerRecord, invocationsPerRecord: median(runs.map((r) => r.invocations / r.records)),
        readUnitsPerRecord: capacityUnitsPerRecord.read, writeUnitsPerRecord: capacityUnitsPerRecord.write, cancelledWriteUnitsPerRecord: capacityUnitsPerRecord.cancelledWrite,
      }, FUNCTION_MEMORY_MB),
      crash: crashes.get(variant) as RunResult,
    };
  });
  const ratio = (a: VariantName, b: VariantName, metric: (r: RunResult) => number) =>
    median(rounds.map((results) => metric(results.find((r) => r.variant === a) as RunResult) / metric(results.find((r) => r.variant === b) as RunResult)));
  const target = (name: string, measured: number, at: Target['at'], bound: number): Target =>
    ({ name, measured, bound, at, met: at === 'least' ? measured >= bound : measured <= bound });
  const ballastCrash = crashes.get('ballast') as RunResult;
  const targets = [
    target('records/s, ballast ÷ hand-written transaction', ratio('ballast', 'transaction', (r) => r.recordsPerSecond), 'least', 0.95),
    target('records/s, ballast ÷ Powertools', ratio('ballast', 'powertools', (r) => r.recordsPerSecond), 'least', 2.5),
    target('CPU per record, ballast ÷ hand-written transaction', ratio('ballast', 'transaction', (r) => r.cpuMsPerRecord), 'most', 1.2),
    target(`units over-applied or lost by ballast, ${(options.crashRate * 100).toFixed(0)} % crash-after-effect`, ballastCrash.overApplied + ballastCrash.lost, 'most', 0),
    target('bundle bytes, ballast ÷ Powertools (same job)', bundles.ballast.bytes / bundles.powertools.bytes, 'most', 1),
    target('cold import, ballast ÷ Powertools (same job)', coldImportRatio(bundles.ballast, bundles.powertools), 'most', 1),
    // Tracing ships the OpenTelemetry API only (the SDK is the layer's): what it adds to the worker
    // (the API's code that survives tree-shaking, plus shared/tracing) against the API's own bundle.
    target("bundle growth from tracing ÷ the OpenTelemetry API's own size (worker as deployed)", bundles.worker.tracingBytes / bundles.openTelemetryApi.bytes, 'most', 1),
  ];
  return {
    date: new Date().toISOString(), machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
    options, summaries, rounds, bundles, targets,
  };
}
