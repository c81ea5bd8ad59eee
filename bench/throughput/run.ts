import { BroadcastChannel } from 'node:worker_threads';
import { setTimeout as delay } from 'node:timers/promises';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { engineEnvironment, LOCAL_CREDENTIALS, machineCpuTicks, ownCpuSeconds, pidCpuSeconds, queueDepth, LOCAL_REGION, type Engine, type SqsEngine } from '../../local/engines/index.ts';
import { FunctionRuntime, INIT_PHASE_LIMIT_MS } from '../../local/lambda/function-runtime.ts';
import { startSqsEventSource } from '../../local/lambda/sqs-event-source.ts';
import { FUNCTION_TIMEOUT_ENV } from '../../shared/aws/index.ts';
import { CONTROL_TABLE, STATE_TABLE } from '../../shared/tables/index.ts';
import { FUNCTION_MEMORY_MB } from './bill.ts';
import { REPORT_CHANNEL, type InvocationReport } from './report-channel.ts';
import type { VariantName } from './variants/index.ts';
import type { CreditTraffic } from './workload.ts';

export interface RunOptions {
  readonly variant: VariantName;
  readonly traffic: CreditTraffic;
  readonly dynamodb: Engine;
  /**
   * Where the sandboxes reach DynamoDB: the fault proxy emulating the service's transaction
   * conflicts in front of `dynamodb`, whose `conflicts()` are counted. Set-up and checks go straight
   * to `dynamodb`. @default - `dynamodb` itself, as DynamoDB Local behaves
   */
  readonly service?: { readonly endpoint: string; conflicts(): Record<string, number> };
  readonly sqs: SqsEngine;
  /** Unique per run: the tables and queues it creates. */
  readonly prefix: string;
  readonly batchSize: number;
  readonly concurrency: number;
  /** The function timeout, and the queue's visibility timeout (as AWS advises, not shorter). */
  readonly timeoutMs: number;
  /** Per effect: the chance the sandbox dies right after its state-table write. */
  readonly crashRate: number;
  /** The run fails past this. */
  readonly maxRunMs: number;
  /**
   * Traffic the sandboxes take before the measured traffic, through the same queue and mapping, on
   * accounts and keys of its own. The run then measures warm sandboxes, as a Lambda function's are
   * once it has run a while: a fresh sandbox runs its first few hundred records largely in V8's
   * interpreter while the JIT compiles the hot paths (on other threads of the process), a cost the
   * run would otherwise charge to every record. @default - none: the sandboxes start cold
   */
  readonly warmUp?: CreditTraffic;
}

/** What one variant did with the traffic. */
export interface RunResult {
  readonly variant: VariantName;
  readonly records: number;
  /** Records of the warm-up traffic the sandboxes took before the measured ones (none measured). */
  readonly warmUpRecords: number;
  readonly elapsedMs: number;
  readonly recordsPerSecond: number;
  /** Requests sent to DynamoDB, by command. */
  readonly requests: Record<string, number>;
  readonly requestsPerRecord: number;
  /** Per record: from its first invocation's start to the end of the invocation that settled it. */
  readonly latencyMs: { readonly p50: number; readonly p99: number };
  /** Sandbox thread CPU (handler, SDK, logging) over every invocation, per record. */
  readonly cpuMsPerRecord: number;
  /**
   * The machine's CPU while the measured traffic ran, per record: DynamoDB Local's process, and
   * this one's (sandboxes, the conflict proxy, the SQS emulator, the driver). On this machine every
   * variant shares its cores with the engine it writes to, so records/s follows their sum.
   */
  readonly machineCpuMsPerRecord: { readonly dynamodb: number; readonly bench: number };
  /** The share of the machine's cores busy meanwhile, whatever ran them (near 1: the run was bound by the machine's CPU). */
  readonly machineBusy: number;
  /** DynamoDB round trips made in series, per invocation that sent any (mean): see `roundTripsInSeries`. */
  readonly roundTripsInSeries: number;
  /** Item writes the requests asked for (see `itemWritesOf`), per record. */
  readonly itemWritesPerRecord: number;
  /** Of those, the ones in requests DynamoDB refused or cancelled (a duplicate, a conflict), per record. */
  readonly refusedItemWritesPerRecord: number;
  readonly invocations: number;
  readonly crashes: number;
  readonly redeliveries: number;
  /** Requests the service would have refused for meeting a transaction in progress on their item. */
  readonly conflicts: number;
  readonly deadLettered: number;
  /** Units credited beyond what the traffic asked for, and units missing from it. */
  readonly overApplied: number;
  readonly lost: number;
  /** Lines and bytes the sandboxes wrote (logs and EMF metrics), per record. */
  readonly logBytesPerRecord: number;
  /** Invocations' durations as Lambda bills them (ms, rounded up each), per record: on this shared machine, not AWS's. */
  readonly billedMsPerRecord: number;
  /** DynamoDB capacity units per record by the service's rules (`capacityOf`); the cancelled transactions' apart, as `cancelledWrite`. */
  readonly capacityUnitsPerRecord: { readonly read: number; readonly write: number; readonly cancelledWrite: number };
}

const MAX_RECEIVE_COUNT = 10;

/**
 * Drives one variant with the traffic the way Lambda's event source mapping does (the local
 * cloud's own: batches from a real SQS emulator, concurrent invocations in sandboxes, partial
 * batch failures and timeouts left on the queue to reappear after their visibility timeout), then
 * checks every account's balance against what the traffic asked for.
 */
export async function runVariant(options: RunOptions): Promise<RunResult> {
  const config = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  const dynamodb = new DynamoDBClient({ ...config, endpoint: options.dynamodb.endpoint });
  const sqs = new SQSClient({ ...config, endpoint: options.sqs.endpoint });
  const tables = await createTables(dynamodb, options.prefix);
  const visibility = String(Math.ceil(options.timeoutMs / 1000));
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${options.prefix}-dlq` }));
  const dlqArn = await queueArn(sqs, dlq.QueueUrl as string);
  const queue = await sqs.send(new CreateQueueCommand({
    QueueName: `${options.prefix}-jobs`,
    Attributes: { VisibilityTimeout: visibility, RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: MAX_RECEIVE_COUNT }) },
  }));
  const queueUrl = queue.QueueUrl as string;
  const { bodies } = options.traffic;

  const requests: Record<string, number> = {};
  let cpuMicros = 0;
  let writes = { asked: 0, refused: 0 };
  let series = { roundTrips: 0, reports: 0 };
  let crashes = 0;
  let billedMs = 0;
  let units = { read: 0, write: 0, cancelledWrite: 0 };
  const channel = new BroadcastChannel(REPORT_CHANNEL);
  channel.onmessage = (message: unknown) => {
    const report = (message as { data: InvocationReport }).data;
    for (const [command, count] of Object.entries(report.requests)) requests[command] = (requests[command] ?? 0) + count;
    cpuMicros += report.cpuMicros;
    writes = { asked: writes.asked + report.itemWrites, refused: writes.refused + report.refusedItemWrites };
    // Only invocations that sent something: a warm-up's late report must not pull the mean down.
    if (report.roundTripsInSeries > 0) series = { roundTrips: series.roundTrips + report.roundTripsInSeries, reports: series.reports + 1 };
    if (report.crashed) crashes += 1;
    billedMs += report.billedMs;
    units = {
      read: units.read + report.capacityUnits.read, write: units.write + report.capacityUnits.write, cancelledWrite: units.cancelledWrite + report.capacityUnits.cancelledWrite,
    };
  };
  let logBytes = 0;
  const runtime = new FunctionRuntime({
    functionName: `bench-${options.variant}`,
    file: new URL('./sandbox-entry.ts', import.meta.url).pathname,
    exportName: 'handler',
    timeoutMs: options.timeoutMs,
    maxSandboxes: options.concurrency,
    environment: {
      ...engineEnvironment({ dynamodb: { ...options.dynamodb, endpoint: options.service?.endpoint ?? options.dynamodb.endpoint }, sqs: options.sqs, redis: { endpoint: '' } as Engine }),
      BALLAST_CACHE_URL: '',
      AWS_LAMBDA_FUNCTION_NAME: `bench-${options.variant}`,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(FUNCTION_MEMORY_MB),
      [FUNCTION_TIMEOUT_ENV]: String(options.timeoutMs),
      STATE_TABLE_NAME: tables.state,
      CONTROL_TABLE_NAME: tables.control,
      DEAD_LETTER_QUEUE_URL: dlq.QueueUrl as string,
      WORKER_VERSION: 'bench',
      MAX_RECEIVE_COUNT: String(MAX_RECEIVE_COUNT),
      DEADLINE_MARGIN_MS: String(Math.min(5_000, Math.floor(options.timeoutMs / 5))),
      RETRY_BASE_DELAY_SECONDS: '1',
      // Powertools settings pass through, so a run can try another log level or disable metrics.
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('POWERTOOLS_')) as [string, string][]),
      BENCH_VARIANT: options.variant,
      BENCH_CRASH_RATE: String(options.crashRate),
    },
    onOutput: (line) => void (logBytes += line.length + 1),
  });

  // Start every sandbox first (cold starts are measured on their own, in bundles.ts), then let them
  // take the warm-up traffic. Their reports arrive on the channel a turn later: the counters are
  // zeroed after the measured traffic is sent.
  await Promise.allSettled(Array.from({ length: options.concurrency }, () => runtime.invoke({ Records: [] })));
  const arn = await queueArn(sqs, queueUrl);
  const mapping = (handler: (event: SQSEvent, context: Context) => Promise<unknown>) => startSqsEventSource({
    sqs, queueUrl, queueArn: arn, handler, functionName: `bench-${options.variant}`,
    functionTimeoutMs: options.timeoutMs, initPhaseLimitMs: INIT_PHASE_LIMIT_MS, batchSize: options.batchSize, maximumConcurrency: options.concurrency,
    onError: () => undefined,
  });
  const drained = async (source: ReturnType<typeof mapping>, startedMs: number) => {
    try {
      while (queueDepth(options.sqs, `${options.prefix}-jobs`) > 0) {
        if (performance.now() - startedMs > options.maxRunMs) throw new Error(`${options.variant}: ${queueDepth(options.sqs, `${options.prefix}-jobs`)} messages still queued after ${options.maxRunMs} ms`);
        await delay(20);
      }
    } finally {
      await source.stop();
    }
  };
  const stopSandboxes = async () => {
    await runtime.stop();
    channel.close();
  };
  const warmedUp = new Set<string>();
  if (options.warmUp) {
    await sendAll(sqs, queueUrl, options.warmUp.bodies);
    await drained(mapping((event, context) => {
      for (const record of event.Records) warmedUp.add(record.messageId);
      return runtime.handler(event, context);
    }), performance.now()).catch(async (error: unknown) => {
      await stopSandboxes();
      throw error;
    });
  }
  await sendAll(sqs, queueUrl, bodies);
  await delay(50);
  for (const key of Object.keys(requests)) delete requests[key];
  cpuMicros = 0;
  writes = { asked: 0, refused: 0 };
  series = { roundTrips: 0, reports: 0 };
  crashes = 0;
  logBytes = 0;
  billedMs = 0;
  units = { read: 0, write: 0, cancelledWrite: 0 };

  const conflictsBefore = total(options.service?.conflicts() ?? {});
  const firstStart = new Map<string, number>();
  const latencies: number[] = [];
  let invocations = 0;
  let redeliveries = 0;
  const handler = async (event: SQSEvent, context: Context) => {
    const startedMs = performance.now();
    invocations += 1;
    for (const record of event.Records) {
      if (firstStart.has(record.messageId)) redeliveries += 1;
      else firstStart.set(record.messageId, startedMs);
    }
    const response = (await runtime.handler(event, context)) as SQSBatchResponse;
    const failed = new Set(response?.batchItemFailures?.map((f) => f.itemIdentifier));
    const endedMs = performance.now();
    for (const record of event.Records) if (!failed.has(record.messageId)) latencies.push(endedMs - (firstStart.get(record.messageId) ?? startedMs));
    return response;
  };
  const cpu = () => ({ dynamodb: pidCpuSeconds(options.dynamodb.pid), bench: ownCpuSeconds(), machine: machineCpuTicks() });
  const cpuBefore = cpu();
  const startedMs = performance.now();
  let cpuAfter: ReturnType<typeof cpu>;
  try {
    await drained(mapping(handler), startedMs);
    cpuAfter = cpu();
  } finally {
    await stopSandboxes();
  }
  const elapsedMs = performance.now() - startedMs;
  const conflicts = total(options.service?.conflicts() ?? {}) - conflictsBefore;

  const balances = new Map<string, number>();
  for await (const page of paginateScan({ client: DynamoDBDocumentClient.from(dynamodb) }, { TableName: tables.state })) {
    for (const item of page.Items ?? []) if (typeof item.accountId === 'string') balances.set(item.accountId, Number(item.balance ?? 0));
  }
  let overApplied = 0;
  let lost = 0;
  for (const [account, want] of options.traffic.expected) {
    const got = balances.get(account) ?? 0;
    if (got > want) overApplied += got - want;
    else lost += want - got;
  }
  const deadLettered = queueDepth(options.sqs, `${options.prefix}-dlq`);
  // A run's tables go, so that every run meets an engine in the same state.
  await Promise.all([tables.state, tables.control].map((TableName) => dynamodb.send(new DeleteTableCommand({ TableName }))));
  await Promise.all([queueUrl, dlq.QueueUrl as string].map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
  dynamodb.destroy();
  sqs.destroy();
  const records = bodies.length;
  latencies.sort((a, b) => a - b);
  return {
    variant: options.variant, records, warmUpRecords: warmedUp.size, elapsedMs, recordsPerSecond: records / (elapsedMs / 1000),
    requests, requestsPerRecord: total(requests) / records,
    latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
    cpuMsPerRecord: cpuMicros / 1000 / records,
    machineCpuMsPerRecord: { dynamodb: ((cpuAfter.dynamodb - cpuBefore.dynamodb) * 1000) / records, bench: ((cpuAfter.bench - cpuBefore.bench) * 1000) / records },
    machineBusy: (cpuAfter.machine.busy - cpuBefore.machine.busy) / Math.max(1, cpuAfter.machine.total - cpuBefore.machine.total),
    roundTripsInSeries: series.reports === 0 ? 0 : series.roundTrips / series.reports,
    itemWritesPerRecord: writes.asked / records, refusedItemWritesPerRecord: writes.refused / records,
    invocations, crashes, redeliveries, conflicts, deadLettered, overApplied, lost,
    logBytesPerRecord: logBytes / records,
    billedMsPerRecord: billedMs / records,
    capacityUnitsPerRecord: { read: units.read / records, write: units.write / records, cancelledWrite: units.cancelledWrite / records },
  };
}

async function sendAll(sqs: SQSClient, queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += 10) {
    await sqs.send(new SendMessageBatchCommand({
      QueueUrl: queueUrl, Entries: bodies.slice(start, start + 10).map((body, i) => ({ Id: String(i), MessageBody: body })),
    }));
  }
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return out.Attributes?.QueueArn as string;
}

function total(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
}

/** The stack's two tables by their keys, without the state table's stream (nothing reads it here). */
async function createTables(dynamodb: DynamoDBClient, prefix: string) {
  const tables = { state: `${prefix}-state`, control: `${prefix}-control` };
  for (const [TableName, key] of [[tables.state, STATE_TABLE.partitionKey], [tables.control, CONTROL_TABLE.partitionKey]] as const) {
    await dynamodb.send(new CreateTableCommand({
      TableName, BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }], KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
    }));
  }
  return tables;
}
