import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDynamoDb, startSqs, type Engine, type SqsEngine } from '../../local/engines/index.ts';
import { startDynamoDbFaultProxy } from '../../local/faults/index.ts';
import { BUNDLE_ENTRIES, OPENTELEMETRY_API_ENTRY, buildLikeTheStack, measureBuild } from '../../bench/throughput/bundles.ts';
import { runVariant, type RunOptions } from '../../bench/throughput/run.ts';
import { creditTraffic } from '../../bench/throughput/workload.ts';

/**
 * What `npm run bench:throughput` measures, checked for truth rather than speed (speed targets live
 * in the bench): every variant gets the same traffic through the same driver, the counts it reports
 * are the requests it really sent, and crashes after the effect are survived exactly once only by
 * the variants whose record and effect commit together.
 */
describe('throughput bench: the variants, the driver, the crash-after-effect', () => {
  let dynamodb: Engine;
  let sqs: SqsEngine;
  before(async () => {
    dynamodb = await startDynamoDb();
    sqs = await startSqs();
  });
  after(async () => {
    await sqs?.stop();
    await dynamodb?.stop();
  });
  // 60 credits over 5 accounts, 10 of them sent twice by the producer.
  const traffic = creditTraffic({ credits: 60, accounts: 5, duplicates: 10, seed: 7 });
  const duplicatedUnits = (() => {
    const seen = new Set<string>();
    let units = 0;
    for (const body of traffic.bodies) {
      if (seen.has(body)) units += (JSON.parse(body) as { payload: { amount: number } }).payload.amount;
      seen.add(body);
    }
    return units;
  })();
  let run = 0;
  const drive = (variant: RunOptions['variant'], crashRate = 0, timeoutMs = 2_000) => runVariant({
    variant, traffic, dynamodb, sqs, prefix: `tp${(run += 1)}`, batchSize: 10, concurrency: 2, timeoutMs, crashRate, maxRunMs: 120_000,
  });

  it("counts what each variant sends: one request per record for the transaction, one or two per wave of a batch's lanes for ballast, three writes around the effect for Powertools", async () => {
    // WHEN each variant takes the same 70 records (a loaded machine may still let an invocation
    // outlive its visibility timeout: a redelivery is one more request, and one more credit for bare)
    const drive5 = (variant: RunOptions['variant']) => drive(variant, 0, 5_000);
    const [bare, transaction, ballast, powertools] = [await drive5('bare'), await drive5('transaction'), await drive5('ballast'), await drive5('powertools')];
    // THEN the bare handler applies the producer's duplicates again, and no idempotent variant does
    assert.ok(bare.overApplied >= duplicatedUnits, JSON.stringify(bare));
    for (const result of [transaction, ballast, powertools]) assert.deepEqual([result.variant, result.overApplied, result.lost, result.deadLettered], [result.variant, 0, 0, 0]);
    // AND the counts are the commands really sent
    assert.deepEqual(bare.requests, { UpdateItemCommand: 70 + bare.redeliveries });
    assert.deepEqual(transaction.requests, { TransactWriteItemsCommand: 70 + transaction.redeliveries });
    // (ballast's group commit: the records a batch runs at once, one per lane, share at most two
    // transactions, the heads of the lanes that go on and those that end; 7 batches over 5 hot
    // accounts make three or four such waves each, and duplicates send their batch-mates again:
    // still fewer requests than records, where one per record would be 70)
    // (a sandbox that met duplicates often enough reads its batches' records first: a BatchGetItem)
    assert.deepEqual(Object.keys(ballast.requests).filter((command) => command !== 'BatchGetItemCommand'), ['TransactWriteItemsCommand']);
    const transactions = ballast.requests.TransactWriteItemsCommand ?? 0;
    assert.ok(transactions >= 7 && transactions < 70 + ballast.redeliveries, JSON.stringify(ballast.requests));
    // (a duplicate running beside its first copy finds it in progress, and comes back for another Put)
    assert.ok((powertools.requests.PutItemCommand ?? 0) >= 70, JSON.stringify(powertools.requests));
    assert.equal(powertools.requests.UpdateItemCommand, 2 * 60, `the effect and the completed record, for each first-time job: ${JSON.stringify(powertools)}`);
    // AND the round trips in series: the bare handler and the transaction send a batch's records
    // side by side (one); Powertools three writes one after another (a duplicate it found in
    // progress comes back later, often in a batch of one round trip, so the mean is above one, not
    // three); ballast one or more waves of its lanes, never more than a batch's ten records
    assert.deepEqual([bare.roundTripsInSeries, transaction.roundTripsInSeries], [1, 1], JSON.stringify([bare, transaction]));
    assert.ok(powertools.roundTripsInSeries > 1, JSON.stringify(powertools));
    assert.ok(ballast.roundTripsInSeries >= 1 && ballast.roundTripsInSeries <= 10, JSON.stringify(ballast));
    // AND the item writes that took effect are exactly what the credits need (the record and the
    // account, once per credit; Powertools' record twice), whatever was refused or cancelled on the way
    const written = (result: typeof bare) => Math.round((result.itemWritesPerRecord - result.refusedItemWritesPerRecord) * result.records);
    assert.deepEqual([written(transaction), written(ballast), written(powertools)], [2 * 60, 2 * 60, 3 * 60], JSON.stringify({ transaction, ballast, powertools }));
    assert.deepEqual([written(bare), bare.refusedItemWritesPerRecord], [70 + bare.redeliveries, 0], JSON.stringify(bare));
    // (each producer duplicate is refused: the transaction's record and account, Powertools' record)
    assert.ok(transaction.refusedItemWritesPerRecord * 70 >= 2 * 10 && powertools.refusedItemWritesPerRecord * 70 >= 10, JSON.stringify({ transaction, powertools }));
    assert.ok(ballast.refusedItemWritesPerRecord * 70 >= 2 * 10, JSON.stringify(ballast));
    // AND the capacity units are the service's bill for those writes: a write unit per item under
    // 1 KB, twice in a transaction (the record and the account once per credit, for the transaction
    // and ballast; Powertools' three writes, and each of its refused Puts, since a failed condition
    // is billed); a cancelled transaction's units kept apart, twice its items
    const units = (result: typeof bare, kind: 'write' | 'cancelledWrite') => Math.round(result.capacityUnitsPerRecord[kind] * result.records);
    const refused = (result: typeof bare) => Math.round(result.refusedItemWritesPerRecord * result.records);
    assert.deepEqual([units(transaction, 'write'), units(ballast, 'write'), units(powertools, 'write'), units(bare, 'write')],
      [4 * 60, 4 * 60, 3 * 60 + refused(powertools), written(bare)], JSON.stringify({ transaction, ballast, powertools, bare }));
    assert.deepEqual([units(transaction, 'cancelledWrite'), units(ballast, 'cancelledWrite'), units(powertools, 'cancelledWrite')], [2 * refused(transaction), 2 * refused(ballast), 0]);
    // (only ballast reads: its screening's BatchGetItem, when a sandbox met duplicates often enough)
    assert.deepEqual([bare, transaction, powertools].map((result) => result.capacityUnitsPerRecord.read), [0, 0, 0]);
    assert.equal(ballast.capacityUnitsPerRecord.read > 0, (ballast.requests.BatchGetItemCommand ?? 0) > 0, JSON.stringify(ballast));
    // AND every record was settled, each latency measured, each invocation's duration billed
    for (const result of [bare, transaction, ballast, powertools]) {
      assert.ok(result.billedMsPerRecord * result.records >= result.invocations, `at least a millisecond per invocation: ${JSON.stringify(result)}`);
      assert.equal(result.records, 70);
      assert.ok(result.cpuMsPerRecord > 0 && result.latencyMs.p99 >= result.latencyMs.p50, JSON.stringify(result));
      // (the machine's CPU: DynamoDB Local worked for every variant, and the bench process, whose
      // threads the sandboxes are, spent at least what they did)
      assert.ok(result.machineCpuMsPerRecord.dynamodb > 0 && result.machineCpuMsPerRecord.bench >= result.cpuMsPerRecord, JSON.stringify(result));
      assert.ok(result.machineBusy > 0 && result.machineBusy <= 1, JSON.stringify(result));
    }
  });

  it('warms the sandboxes with traffic of their own first: what the run reports is the measured traffic alone', async () => {
    // GIVEN 24 warm-up records (4 of them duplicates) on accounts and keys of their own
    const warmUp = creditTraffic({ credits: 20, accounts: 5, duplicates: 4, seed: 8, namespace: 'warm-up' });
    assert.ok(warmUp.bodies.every((body) => !traffic.bodies.includes(body)) && [...warmUp.expected.keys()].every((account) => !traffic.expected.has(account)));
    // WHEN the bare handler takes them, then the 70 measured records
    const bare = await runVariant({
      variant: 'bare', traffic, warmUp, dynamodb, sqs, prefix: `tp${(run += 1)}`, batchSize: 10, concurrency: 2, timeoutMs: 5_000, crashRate: 0, maxRunMs: 120_000,
    });
    // THEN every warm-up record went through the sandboxes, and none is counted: the requests are
    // the measured records' own (its duplicates over-applied on the measured accounts only)
    assert.equal(bare.warmUpRecords, 24);
    assert.equal(bare.records, 70);
    assert.deepEqual(bare.requests, { UpdateItemCommand: 70 + bare.redeliveries }, JSON.stringify(bare));
    assert.ok(bare.overApplied >= duplicatedUnits && bare.lost === 0, JSON.stringify(bare));
  });

  it('kills sandboxes right after the effect: ballast applies every credit exactly once, the bare handler does not', async () => {
    // WHEN a fifth of the state-table writes are followed by the sandbox's death
    const ballast = await drive('ballast', 0.2);
    const bare = await drive('bare', 0.2);
    // THEN the crashes happened, the batches came back, and only ballast stayed exact
    assert.ok(ballast.crashes > 0 && ballast.redeliveries > 0, JSON.stringify(ballast));
    assert.deepEqual([ballast.overApplied, ballast.lost, ballast.deadLettered], [0, 0, 0]);
    assert.ok(bare.crashes > 0 && bare.overApplied > duplicatedUnits, JSON.stringify(bare));
  });

  it("as the service behaves, two transactions on one account at once conflict: the hand-written variant's come back as redeliveries, ballast's lanes and in-place retries keep its records on their first receive", async (t) => {
    // GIVEN DynamoDB Local behind the emulation of the service's item-level transaction conflicts
    const service = await startDynamoDbFaultProxy({ target: dynamodb.endpoint, transactionConflicts: true });
    t.after(() => service.stop());
    const viaService = (variant: RunOptions['variant']) => runVariant({
      variant, traffic, dynamodb, service, sqs, prefix: `tp${(run += 1)}`, batchSize: 10, concurrency: 2, timeoutMs: 5_000, crashRate: 0, maxRunMs: 120_000,
    });
    // WHEN both take the 70 records (10 to a batch over 5 accounts: most batches hold one account twice)
    const transaction = await viaService('transaction');
    const ballast = await viaService('ballast');
    // THEN the hand-written variant's concurrent transactions on one account conflicted, and each
    // conflicted record waited out its visibility timeout to come back
    assert.ok(transaction.conflicts >= 10, JSON.stringify(transaction));
    assert.ok(transaction.redeliveries >= transaction.conflicts, JSON.stringify(transaction));
    // AND ballast met only the conflicts of other invocations, retried them in place, and needed far fewer redeliveries
    assert.ok(ballast.conflicts < transaction.conflicts, JSON.stringify(ballast));
    assert.ok(ballast.redeliveries * 2 < transaction.redeliveries, JSON.stringify({ ballast, transaction }));
    // AND both stayed exact
    for (const result of [transaction, ballast]) assert.deepEqual([result.variant, result.overApplied, result.lost, result.deadLettered], [result.variant, 0, 0, 0]);
  });

  it("the worker bundle leaves the cache client out (its readiness ping speaks RESP itself), and carries of tracing only the OpenTelemetry API and ballast's helpers", async () => {
    // WHEN the worker, and the API alone, are built as the stack builds them (in memory)
    const worker = await buildLikeTheStack(BUNDLE_ENTRIES.worker, 'index.mjs', false);
    const api = await buildLikeTheStack(OPENTELEMETRY_API_ENTRY, 'index.mjs', false);
    // THEN the ping is in, the cache client is not, and only the English messages of zod are
    const inputs = Object.keys(worker.inputs);
    assert.ok(inputs.some((input) => input.includes('shared/readiness/cache-ping.ts')), 'the ping is in');
    assert.deepEqual(inputs.filter((input) => /node_modules\/(ioredis|@ioredis)\//.test(input)), []);
    assert.deepEqual(inputs.filter((input) => /zod\/v4\/locales\/(?!en)/.test(input)), [], 'only the English messages of zod');
    // AND the instrumented pipeline brings in tracing, counted: the API and the helpers, never the SDK (a layer's, on AWS)
    assert.ok(inputs.some((input) => input.startsWith('node_modules/@opentelemetry/api/')), 'the API is in');
    assert.ok(inputs.some((input) => input.startsWith('shared/tracing/')), 'the helpers are in');
    assert.deepEqual(inputs.filter((input) => /node_modules\/@opentelemetry\/(?!api\/)/.test(input)), [], 'only the API of OpenTelemetry');
    assert.ok(worker.tracingBytes > 0 && worker.tracingBytes < worker.bytes, JSON.stringify({ bytes: worker.bytes, tracingBytes: worker.tracingBytes }));
    // AND the API alone, the yardstick of tracing's growth, is measured
    assert.ok(api.bytes > 0 && api.tracingBytes > 0 && api.tracingBytes <= api.bytes, JSON.stringify({ bytes: api.bytes, tracingBytes: api.tracingBytes }));
  });
});

describe('throughput bench: measureBuild', () => {
  it('counts as tracing the bytes in the code of the OpenTelemetry packages and shared/tracing, and only those that reached it', () => {
    // GIVEN a build's metafile: inputs in the code, one shaken out, and the source map
    const metafile = {
      inputs: {},
      outputs: {
        '../tmp/worker/index.mjs.map': { bytes: 900, inputs: {}, imports: [], exports: [] },
        '../tmp/worker/index.mjs': {
          bytes: 500, imports: [], exports: [], entryPoint: 'functions/worker/index.ts',
          inputs: {
            'functions/worker/index.ts': { bytesInOutput: 200 },
            'node_modules/@opentelemetry/api/build/esm/api/trace.js': { bytesInOutput: 60 },
            'node_modules/@opentelemetry/api/build/esm/baggage/utils.js': { bytesInOutput: 0 },
            'node_modules/@aws-sdk/client-sqs/node_modules/@opentelemetry/api/build/esm/api/context.js': { bytesInOutput: 5 },
            'shared/tracing/spans.ts': { bytesInOutput: 30 },
            'shared/batch/process-batch.ts': { bytesInOutput: 100 },
          },
        },
      },
    };
    // WHEN it is measured
    const built = measureBuild(metafile);
    // THEN the code and the map are told apart, the shaken-out input is dropped, and tracing is the API's and the helpers' bytes
    assert.deepEqual([built.bytes, built.mapBytes, built.tracingBytes], [500, 900, 60 + 5 + 30]);
    assert.equal(Object.keys(built.inputs).length, 5);
  });
});
