/**
 * The Lambda entry the throughput bench runs in each sandbox: the chosen variant (BENCH_VARIANT)
 * on clients the bench can see into. Every DynamoDB request is counted by command, with its item
 * writes (and whether DynamoDB refused them), each invocation's thread CPU is measured, and with
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
import { awsClientConfig } from '../../../../shared/aws/index.ts';
import { REPORT_CHANNEL, type InvocationReport } from './report-channel.ts';
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
let cpuStart = process.threadCpuUsage();
const flush = (crashed: boolean) => {
  const cpu = process.threadCpuUsage(cpuStart);
  channel.postMessage({
    requests, cpuMicros: cpu.user + cpu.system, roundTripsInSeries: roundTripsInSeries(spans), itemWrites, refusedItemWrites, crashed,
  } satisfies InvocationReport);
  requests = {};
  spans = [];
  itemWrites = 0;
  refusedItemWrites = 0;
};

const touchesState = (input: Record<string, unknown>): boolean =>
  input.TableName === stateTable
  || (Array.isArray(input.TransactItems) && input.TransactItems.some((item: Record<string, { TableName?: string }>) =>
    Object.values(item).some((body) => body.TableName === stateTable)));
const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

const dynamodb = new DynamoDBClient(awsClientConfig());
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
      throw error;
    })
    .finally(() => spans.push({ sentMs, answeredMs: performance.now() }));
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
  try {
    return await handle(event, context);
  } finally {
    flush(false);
  }
};
