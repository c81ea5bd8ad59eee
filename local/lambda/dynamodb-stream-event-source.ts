import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { createLambdaContext } from './context.ts';
import { abandonableInvocations, outcomeCounters } from './abandonable-invocations.ts';
import type { PlannedBatch, Settlement, ShardBatchesSettings } from './dynamodb-stream-batches.ts';
import {
  regionOfStream, resolveStreamOptions, type DynamoDbStreamEventSourceOptions, type StreamInvocationSummary,
} from './dynamodb-stream-options.ts';
import { batchVerdict, streamInvocationRecord } from './dynamodb-stream-records.ts';
import { listShards, newShard, readShard, type ShardReader, type StreamShard } from './dynamodb-stream-shards.ts';
import { eventCounter } from './event-counts.ts';

export type { DynamoDbStreamEventSourceOptions, StreamInvocationSummary } from './dynamodb-stream-options.ts';

/** How often DescribeStream looks for new shards (a finished parent starts its children at once). */
const SHARD_DISCOVERY_INTERVAL_MS = 1_000;
/** Pause after a failed call, so a missing stream or a stopped engine is not hammered. */
const ERROR_BACKOFF_MS = 1_000;
/** How often idle() looks at the shards. */
const IDLE_CHECK_MS = 20;

/** One shard as the mapping sees it. */
export interface ShardStats {
  readonly shardId: string;
  readonly parentShardId?: string;
  /** `waiting`: for its parent to finish; `finished`: closed and read to the end (or skipped at LATEST). */
  readonly state: StreamShard['state'];
  /** The SequenceNumber of the last record processed or skipped. */
  readonly checkpoint?: string;
}

/** Counters since start; `ok` counts handlers that returned, whatever they reported. */
export interface DynamoDbStreamEventSourceStats {
  readonly invocations: number;
  readonly ok: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly abandoned: number;
  readonly bisections: number;
  /** Records the handler processed (successful batches and the part before a reported failure). */
  readonly recordsProcessed: number;
  /** Records skipped after their retries or age ran out (reported to the on-failure destination). */
  readonly recordsDiscarded: number;
  readonly inFlight: number;
  readonly shards: readonly ShardStats[];
}

export interface DynamoDbStreamEventSource {
  /**
   * Stops reading at once, waits up to `graceMs` (default: the function timeout) for an in-flight
   * invocation per shard, abandons the rest without checkpointing them, and resolves when every
   * poller has ended. Calling it again returns the same promise.
   */
  stop(options?: { readonly graceMs?: number }): Promise<void>;
  stats(): DynamoDbStreamEventSourceStats;
  /**
   * Resolves once every shard has caught up (a GetRecords that began after this call found nothing
   * new and nothing is buffered) and no invocation is in flight; rejects after `timeoutMs`, or when
   * stopped. Tests use it to wait for the stream to drain.
   */
  idle(timeoutMs: number): Promise<void>;
}

/**
 * Emulates a Lambda event source mapping for one DynamoDB stream, so the local cloud delivers
 * changes with AWS's semantics: one poller per shard, a child shard only after its parent is read
 * to the end, batches strictly in order and one at a time per shard (parallelization factor 1),
 * batch size and window, checkpoints that move only past processed records, partial batch
 * responses that retry from the lowest failed record, retries, bisection, maximum record age and an
 * on-failure destination that receives AWS's invocation record. Nothing is checkpointed for an
 * invocation that threw, timed out or was abandoned.
 *
 * As with the SQS mapping, a handler that timed out or was abandoned is not killed, only ignored.
 *
 * @example
 * import { startDynamoDbStreamEventSource } from '../local/lambda/dynamodb-stream-event-source.ts';
 * const source = startDynamoDbStreamEventSource({ streams, streamArn, handler, functionName: 'projector', functionTimeoutMs: 30_000 });
 * await source.idle(5_000); // every change so far has been handled
 * await source.stop({ graceMs: 5_000 });
 */
export function startDynamoDbStreamEventSource(options: DynamoDbStreamEventSourceOptions): DynamoDbStreamEventSource {
  const config = resolveStreamOptions(options);
  const { streams, streamArn, handler, functionName, functionTimeoutMs, pollIntervalMs } = config;
  const nowMs = options.nowMs ?? Date.now;
  /** Named in invocation records, also for batches that expired before any invocation. */
  const functionArn = createLambdaContext({ functionName, timeoutMs: functionTimeoutMs }).invokedFunctionArn;
  const logError = (error: unknown) => void process.stderr.write(`dynamodb stream event source ${functionName}: ${String(error)}\n`);
  /** Reports a failure without ever throwing: a throwing callback must not kill a poller. */
  const reportError = (error: unknown) => {
    try { (options.onError ?? logError)(error); } catch (callbackError) { logError(callbackError); }
  };
  const countEvents = eventCounter(options.onEventCount, reportError);
  const counters = { invocations: 0, ok: 0, errors: 0, timeouts: 0, abandoned: 0, bisections: 0, recordsProcessed: 0, recordsDiscarded: 0, inFlight: 0 };
  const shards = new Map<string, StreamShard>();
  const pollers: Promise<void>[] = [];
  const stopping = new AbortController();
  const abortSignal = stopping.signal;
  const running = abandonableInvocations();
  const reader: ShardReader = { streams, streamArn, awsRegion: regionOfStream(streamArn), nowMs, abortSignal };
  const batchSettings: ShardBatchesSettings = {
    ...config, maximumRecordAgeMs: config.maximumRecordAgeSeconds < 0 ? -1 : config.maximumRecordAgeSeconds * 1_000,
  };
  /** Numbers every GetRecords call, so idle() can ask for reads that began after it was called. */
  let reads = 0;
  let discovered = false;

  /** Sleeps, but wakes up at once when stop() is called. */
  async function pause(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: abortSignal }).catch(() => undefined);
  }

  /** Registers shards not seen before; the first listing applies the starting position. */
  async function discoverShards(): Promise<void> {
    for (const listed of await listShards(reader)) {
      if (!listed.ShardId || shards.has(listed.ShardId)) continue;
      shards.set(listed.ShardId, newShard({ ...listed, ShardId: listed.ShardId }, discovered ? undefined : config, batchSettings));
    }
    discovered = true;
  }

  /** Starts a poller for every shard whose parent is finished, gone from the stream, or absent. */
  function startEligibleShards(): void {
    if (abortSignal.aborted) return;
    for (const shard of shards.values()) {
      const parent = shard.parentShardId === undefined ? undefined : shards.get(shard.parentShardId);
      if (shard.state !== 'waiting' || (parent && parent.state !== 'finished')) continue;
      shard.state = 'polling';
      pollers.push(pollShard(shard));
    }
  }

  async function discoverPeriodically(): Promise<void> {
    while (!abortSignal.aborted) {
      try {
        await discoverShards();
        startEligibleShards();
      } catch (error) {
        if (!abortSignal.aborted) reportError(error);
      }
      await pause(SHARD_DISCOVERY_INTERVAL_MS);
    }
  }

  /** Reads as needed and decides what to do next: a batch, a wait (nothing new, or the window is open), or the end. */
  async function nextStep(shard: StreamShard): Promise<PlannedBatch | { readonly waitMs: number } | 'finished'> {
    const { batches } = shard;
    if (!batches.hasPlannedBatch && batches.room > 0 && !shard.ended) {
      const bufferedBefore = batches.buffered;
      await readShard(reader, shard, ++reads);
      countEvents('PolledEventCount', batches.buffered - bufferedBefore);
      if (batches.buffered === 0) return shard.ended ? 'finished' : { waitMs: pollIntervalMs };
      const windowLeftMs = (batches.firstReadAtMs ?? 0) + config.maximumBatchingWindowMs - nowMs();
      if (batches.room > 0 && !shard.ended && windowLeftMs > 0) return { waitMs: Math.min(pollIntervalMs, windowLeftMs) };
    }
    return batches.next(nowMs()) ?? (shard.ended ? 'finished' : { waitMs: pollIntervalMs });
  }

  /** Invokes the handler with one batch and applies the verdict to the shard. */
  async function invoke(shard: StreamShard, batch: PlannedBatch): Promise<Settlement | 'abandoned'> {
    const sequenceNumbers = batch.records.map((entry) => entry.sequenceNumber);
    const event: DynamoDBStreamEvent = { Records: structuredClone(batch.records.map((entry) => entry.record)) };
    const context = createLambdaContext({ functionName, timeoutMs: functionTimeoutMs, nowMs });
    const startedAtMs = nowMs();
    counters.invocations += 1;
    countEvents('InvokedEventCount', batch.records.length);
    counters.inFlight += 1;
    const result = await running.invoke(handler, event, context, functionTimeoutMs + config.initPhaseLimitMs);
    counters.inFlight -= 1;
    counters[outcomeCounters[result.status]] += 1;
    let next: Settlement | 'none' = 'none';
    let processed = 0;
    if (result.status !== 'abandoned') {
      for (const entry of batch.records) {
        entry.invokeCount += 1;
        entry.lastInvocation = { requestId: context.awsRequestId, outcome: result.status };
      }
      const verdict = result.status === 'ok'
        ? batchVerdict(result.response, sequenceNumbers, config.reportBatchItemFailures)
        : { kind: 'failed' as const };
      const bufferedBefore = shard.batches.buffered;
      next = shard.batches.settle(batch, verdict);
      processed = bufferedBefore - shard.batches.buffered;
      counters.recordsProcessed += processed;
      if (next === 'bisect') counters.bisections += 1;
    }
    countEvents('FailedInvokeEventCount', batch.records.length - processed);
    try {
      options.onInvocation?.({
        awsRequestId: context.awsRequestId,
        shardId: shard.shardId,
        sequenceNumbers,
        outcome: result.status,
        next,
        durationMs: nowMs() - startedAtMs,
        iteratorAgeMs: Math.max(0, startedAtMs - 1000 * Number(batch.records.at(-1)?.record.dynamodb?.ApproximateCreationDateTime ?? startedAtMs / 1000)),
        ...(result.status === 'error' ? { error: result.error } : {}),
      });
    } catch (error) {
      reportError(error); // the batch is settled already; a throwing callback must not look like a read failure
    }
    return next === 'none' ? 'abandoned' : next;
  }

  /**
   * Reports a batch to the on-failure destination, then checkpoints past it. The report is retried
   * until it is delivered (or the mapping stops, leaving the batch in place): skipping records
   * without their report would lose them silently.
   */
  async function discard(shard: StreamShard, batch: PlannedBatch & { readonly discard: NonNullable<PlannedBatch['discard']> }): Promise<void> {
    if (config.onFailure) {
      const head = batch.records[0];
      const body = JSON.stringify(streamInvocationRecord({
        condition: batch.discard,
        ...(head?.lastInvocation ? { lastInvocation: head.lastInvocation } : {}),
        fallbackRequestId: randomUUID(),
        functionArn,
        approximateInvokeCount: Math.max(...batch.records.map((entry) => entry.invokeCount)),
        timestampMs: nowMs(),
        shardId: shard.shardId,
        streamArn,
        records: batch.records,
      }));
      const { sqs, queueUrl } = config.onFailure;
      for (;;) {
        if (abortSignal.aborted) return;
        try {
          await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }), { abortSignal });
          break;
        } catch (error) {
          if (!abortSignal.aborted) reportError(error);
          await pause(ERROR_BACKOFF_MS);
        }
      }
    }
    shard.batches.skip(batch);
    counters.recordsDiscarded += batch.records.length;
    countEvents(config.onFailure ? 'OnFailureDestinationDeliveredEventCount' : 'DroppedEventCount', batch.records.length);
  }

  /** One shard, strictly in order: one batch at a time until the shard ends or the mapping stops. */
  async function pollShard(shard: StreamShard): Promise<void> {
    while (!abortSignal.aborted) {
      try {
        const step = await nextStep(shard);
        if (step === 'finished') break;
        if ('waitMs' in step) await pause(step.waitMs);
        else if (step.discard) await discard(shard, { ...step, discard: step.discard });
        else {
          const settled = await invoke(shard, step);
          if (settled === 'abandoned') return;
          if (settled !== 'checkpoint') await pause(pollIntervalMs); // retry after a poll interval, not in a hot loop
        }
      } catch (error) {
        if (abortSignal.aborted) return;
        const trimmed = (error as { name?: unknown }).name === 'TrimmedDataAccessException';
        // DynamoDB Local answers a LATEST iterator on a brand-new, empty shard this way; the
        // recovery below is the whole story, so it is not worth an error line.
        if (!trimmed || shard.lastReadSequenceNumber !== undefined) reportError(error);
        shard.iterator = undefined; // read again from the last record read
        if (trimmed) {
          shard.lastReadSequenceNumber = undefined; // the position was trimmed away: resume at the oldest record left
          shard.startingPosition = 'TRIM_HORIZON';
        }
        await pause(ERROR_BACKOFF_MS);
      }
    }
    if (abortSignal.aborted) return;
    shard.state = 'finished';
    startEligibleShards();
  }

  /** Whether every shard has caught up with a read numbered above `sinceRead` and nothing is in flight. */
  function isIdle(sinceRead: number): boolean {
    return discovered && counters.inFlight === 0 && [...shards.values()].every((shard) => shard.state === 'finished'
      || (shard.state === 'polling' && shard.batches.buffered === 0 && shard.caughtUpAtRead > sinceRead));
  }

  const discovery = discoverPeriodically();
  let stopped: Promise<void> | undefined;
  return {
    stop({ graceMs = functionTimeoutMs } = {}) {
      stopped ??= (async () => {
        stopping.abort();
        const grace = setTimeout(running.abandonAll, graceMs);
        await discovery;
        // A poller that finishes now starts no others (aborted), so this list is final.
        await Promise.all(pollers);
        clearTimeout(grace);
      })();
      return stopped;
    },
    stats: () => ({
      ...counters,
      shards: [...shards.values()].map((shard) => ({
        shardId: shard.shardId,
        ...(shard.parentShardId === undefined ? {} : { parentShardId: shard.parentShardId }),
        state: shard.state,
        ...(shard.batches.checkpoint === undefined ? {} : { checkpoint: shard.batches.checkpoint }),
      })),
    }),
    async idle(timeoutMs) {
      const sinceRead = reads;
      const deadlineMs = Date.now() + timeoutMs;
      while (!isIdle(sinceRead)) {
        if (abortSignal.aborted) throw new Error(`idle(): the ${functionName} stream event source was stopped.`);
        if (Date.now() >= deadlineMs) {
          const shardStates = [...shards.values()].map((shard) => `${shard.shardId} ${shard.state}, ${shard.batches.buffered} buffered`);
          throw new Error(`idle(): the ${functionName} stream event source was still busy after ${timeoutMs} ms: ${counters.inFlight} in flight; shards: ${shardStates.join('; ') || 'none yet'}.`);
        }
        await delay(IDLE_CHECK_MS);
      }
    },
  };
}
