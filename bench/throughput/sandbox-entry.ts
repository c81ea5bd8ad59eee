/**
 * The Lambda entry the throughput bench runs in each sandbox: the chosen variant (BENCH_VARIANT)
 * on clients the bench can see into. Every DynamoDB request is counted by command, with its item
 * writes (and whether DynamoDB refused them) and the capacity units it costs (`capacity.ts`), each
 * invocation's thread CPU and duration are measured, and with
 * BENCH_CRASH_RATE a write that touched the state table (the business effect) kills the sandbox
 * right after DynamoDB accepted it, before anything else the handler would do — the
 * crash-after-effect the idempotency layers must survive.
 * Counts travel to the bench on a BroadcastChannel, once per invocation.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { REPORT_CHANNEL, type InvocationReport } from './report-channel.ts';
import { capacityOf, type CapacityUnits } from './capacity.ts';
import { itemWritesOf } from './item-writes.ts';
import { roundTripsInSeries, type RequestSpan } from './round-trips.ts';
import { VARIANTS, type VariantName } from './variants/index.ts';

const variant = VARIANTS[process.env.BENCH_VARIANT as VariantName];
if (!variant) throw new Error(`BENCH_VARIANT must be one of ${Object.keys(VARIANTS).join(', ')}, got '${process.env.BENCH_VARIANT}'`);
const crashRate = Number(process.env.BENCH_CRASH_RATE ?? 0);
const stateTable = process.env.STATE_TABLE_NAME;
const channel = new BroadcastChannel(REPORT_CHANNEL);
channel.unref();

let requests: Record<string, number> = {};
let spans: RequestSpan[] = [];
let itemWrites = 0;
let refusedItemWrites = 0;
let units = { read: 0, write: 0, cancelledWrite: 0 };
let cpuStart = process.threadCpuUsage();
let startedMs = performance.now();
/** CPU the bench's own reading of requests took in this invocation. */
let benchMicros = 0;
const flush = (crashed: boolean) => {
  const cpu = process.threadCpuUsage(cpuStart);
  channel.postMessage({
    requests, cpuMicros: Math.max(0, cpu.user + cpu.system - benchMicros), roundTripsInSeries: roundTripsInSeries(spans), itemWrites, refusedItemWrites, crashed,
    // Lambda bills each invocation by the millisecond, rounded up (a crashed one up to its crash).
    billedMs: Math.ceil(performance.now() - startedMs), capacityUnits: units,
  } satisfies InvocationReport);
  requests = {};
  spans = [];
  itemWrites = 0;
  refusedItemWrites = 0;
  units = { read: 0, write: 0, cancelledWrite: 0 };
  benchMicros = 0;
};

const touchesState = (input: Record<string, unknown>): boolean =>
  input.TableName === stateTable
  || (Array.isArray(input.TransactItems) && input.TransactItems.some((item: Record<string, { TableName?: string }>) =>
    Object.values(item).some((body) => body.TableName === stateTable)));
const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

const dynamodb = new DynamoDBClient(awsClientConfig());
/** What each request costs, read from its body as sent (values in wire form, whichever client marshalled them). */
const costs = new WeakMap<object, CapacityUnits>();
const utf8 = new TextDecoder();
dynamodb.middlewareStack.add((next, context) => async (args) => {
  // The SDK serializes to bytes (older versions to a string).
  const body = (args.request as { body?: unknown }).body;
  // Reading the body is the bench's work, not the variant's: its CPU is left out of the invocation's.
  const before = process.threadCpuUsage();
  const text = typeof body === 'string' ? body : body instanceof Uint8Array ? utf8.decode(body) : undefined;
  if (text) costs.set(context, capacityOf(context.commandName ?? 'unknown', JSON.parse(text) as Record<string, unknown>));
  const spent = process.threadCpuUsage(before);
  benchMicros += spent.user + spent.system;
  return next(args);
}, { step: 'build', name: 'benchCapacity' });
dynamodb.middlewareStack.add((next, context) => async (args) => {
  const command = context.commandName ?? 'unknown';
  requests[command] = (requests[command] ?? 0) + 1;
  const writes = itemWritesOf(command, args.input as Record<string, unknown>);
  itemWrites += writes;
  const sentMs = performance.now();
  // A refused request is a round trip too (a cancelled transaction, a conflict).
  const output = await next(args)
    .catch((error: unknown) => {
      refusedItemWrites += writes;
      // A failed condition on a single write is billed (throttling, a conflict are not); a cancelled
      // transaction's items are kept apart, billed or not.
      const cost = costs.get(context);
      if (cost && command === 'TransactWriteItemsCommand') units.cancelledWrite += cost.write;
      else if (cost && (error as Error).name === 'ConditionalCheckFailedException') units.write += cost.write;
      throw error;
    })
    .finally(() => spans.push({ sentMs, answeredMs: performance.now() }));
  const cost = costs.get(context);
  units.read += cost?.read ?? 0;
  units.write += cost?.write ?? 0;
  if (crashRate > 0 && WRITES.has(command) && touchesState(args.input as Record<string, unknown>) && Math.random() < crashRate) {
    flush(true);
    // An uncaught exception ends the sandbox thread, as a crashed process ends a Lambda sandbox.
    setImmediate(() => { throw new Error('bench: crash after the effect was written'); });
    return new Promise<never>(() => undefined);
  }
  return output;
}, { step: 'initialize', name: 'benchCountAndCrash' });

// SQS calls count too (backoffs, dead letters, heartbeats): a request is a request.
const sqs = new SQSClient(awsClientConfig());
sqs.middlewareStack.add((next, context) => async (args) => {
  const command = `SQS.${context.commandName ?? 'unknown'}`;
  requests[command] = (requests[command] ?? 0) + 1;
  return next(args);
}, { step: 'initialize', name: 'benchCount' });

const handle = variant({
  dynamodb,
  documents: DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
  sqs,
  env: process.env,
});

export const handler = async (event: SQSEvent, context: Context) => {
  cpuStart = process.threadCpuUsage();
  startedMs = performance.now();
  try {
    return await handle(event, context);
  } finally {
    flush(false);
  }
};
