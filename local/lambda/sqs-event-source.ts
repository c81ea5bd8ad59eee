import { setTimeout as delay } from 'node:timers/promises';
import {
  ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, type Message, type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { createLambdaContext, MAX_FUNCTION_TIMEOUT_MS } from './context.ts';
import { invokeWithTimeout, type InvocationResult } from './invoke.ts';
import { failedRecordIds, toSqsRecord } from './sqs-records.ts';
import { eventCounter, type EventCountListener } from './event-counts.ts';
import { withDefaults } from '../../shared/options/index.ts';

/** Longest long poll, in seconds: short, so that stop() never waits long on a receive. */
const POLL_WAIT_SECONDS = 1;
/** SQS receives, deletes and changes at most 10 messages per request. */
const SQS_MAX_PER_REQUEST = 10;
/** Pause after a failed poll, so a missing queue or a stopped engine is not hammered. */
const POLL_ERROR_BACKOFF_MS = 1_000;
/** Pause between empty short polls in the last second of a batching window. */
const WINDOW_REPOLL_MS = 50;

/** One event source mapping: the queue, the function, and the mapping's settings from the template. */
export interface SqsEventSourceOptions {
  /** Client for the queue's endpoint (fauxqs locally). */
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** Becomes each record's `eventSourceARN`; its region becomes `awsRegion`. */
  readonly queueArn: string;
  readonly handler: (event: SQSEvent, context: Context) => Promise<unknown>;
  readonly functionName: string;
  /** The function's timeout: a handler still running after it counts as failed. */
  readonly functionTimeoutMs: number;
  /**
   * How long a cold start's Init phase may run before the function timeout starts: the mapping
   * waits this much longer than the timeout for an invocation. Pass the runtime's
   * `INIT_PHASE_LIMIT_MS` for sandboxed functions; a handler called in process has no Init.
   * @default 0
   */
  readonly initPhaseLimitMs?: number;
  /** Most records per invocation (1–10 000; at most 10 for FIFO queues). @default 10 */
  readonly batchSize?: number;
  /**
   * How long to keep gathering records once the first one arrived (0–300 000; at least 1 000
   * when batchSize is above 10; FIFO queues support only 0).
   * @default 0 - invoke with whatever one receive returns
   */
  readonly maximumBatchingWindowMs?: number;
  /** Most invocations in flight at once (AWS allows 2–1 000; 1 is allowed here for tests). @default 2 */
  readonly maximumConcurrency?: number;
  /** Whether `batchItemFailures` in the response is honoured (`FunctionResponseTypes`). @default true */
  readonly reportBatchItemFailures?: boolean;
  /** Called after each invocation has been settled with the queue. @default - nothing is reported */
  readonly onInvocation?: (summary: InvocationSummary) => void;
  /**
   * Called with the mapping's event counts as they happen (Lambda's `MetricsConfig` EventCount
   * metrics): events polled, invoked, failed and deleted. @default - nothing is reported
   */
  readonly onEventCount?: EventCountListener;
  /** Called when a poll, delete or release fails; polling goes on. @default - one line on stderr */
  readonly onError?: (error: unknown) => void;
  /** Clock for durations, batching windows and the handler's countdown. @default Date.now */
  readonly nowMs?: () => number;
}

/** What one invocation did, for progress reports and statistics. */
export interface InvocationSummary {
  readonly awsRequestId: string;
  readonly batchSize: number;
  /** `abandoned`: still running when stop()'s grace period ended. */
  readonly outcome: 'ok' | 'error' | 'timeout' | 'abandoned';
  /** Records left on the queue; they reappear after their visibility timeout. */
  readonly failedMessageIds: readonly string[];
  readonly durationMs: number;
  /** What the handler threw, for outcome `error`. */
  readonly error?: unknown;
}

/** Counters since start; `ok` counts handlers that returned, whatever they reported. */
export interface SqsEventSourceStats {
  readonly invocations: number;
  readonly ok: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly abandoned: number;
  readonly messagesDeleted: number;
  readonly inFlight: number;
  readonly maxObservedConcurrency: number;
}

export interface SqsEventSource {
  /**
   * Stops receiving at once, waits up to `graceMs` (default: the function timeout) for in-flight
   * invocations, abandons the rest without deleting their records, and resolves when every poller
   * has ended. Calling it again returns the same promise.
   */
  stop(options?: { readonly graceMs?: number }): Promise<void>;
  stats(): SqsEventSourceStats;
}

const defaults = { batchSize: 10, maximumBatchingWindowMs: 0, maximumConcurrency: 2, reportBatchItemFailures: true, initPhaseLimitMs: 0 } as const;

type Settled = InvocationResult | { readonly status: 'abandoned' };
type ResolvedOptions = SqsEventSourceOptions & Required<Pick<SqsEventSourceOptions, keyof typeof defaults>>;
/** Which counter each outcome bumps. */
const outcomeCounters = { ok: 'ok', error: 'errors', timeout: 'timeouts', abandoned: 'abandoned' } as const;

/**
 * Emulates a Lambda event source mapping for one SQS queue, so the local cloud delivers messages
 * to handlers with AWS's semantics rather than a simplified loop: long-polling pollers, batch
 * size and batching window, a hard cap of `maximumConcurrency` invocations, deletion of only the
 * records not reported in `batchItemFailures`, and nothing deleted after an error or a timeout,
 * so the whole batch comes back after the queue's visibility timeout. FIFO records keep the order
 * SQS returns them in (FIFO queues allow neither a window nor batches above 10, as on AWS).
 *
 * One difference cannot be emulated in-process: a handler that timed out or was abandoned is not
 * killed, only ignored, so its side effects may still land after its batch was handed back.
 *
 * @example
 * import { startSqsEventSource } from '../local/lambda/sqs-event-source.ts';
 * const source = startSqsEventSource({ sqs, queueUrl, queueArn, handler, functionName: 'worker', functionTimeoutMs: 30_000 });
 * // ...
 * await source.stop({ graceMs: 5_000 });
 */
export function startSqsEventSource(options: SqsEventSourceOptions): SqsEventSource {
  const config: ResolvedOptions = withDefaults(defaults, options);
  const fifo = options.queueUrl.endsWith('.fifo');
  validate(config, fifo);
  const { sqs, queueUrl, queueArn, handler, functionName, functionTimeoutMs, batchSize, maximumBatchingWindowMs: windowMs } = config;
  const nowMs = options.nowMs ?? Date.now;
  const logError = (error: unknown) => void process.stderr.write(`sqs event source ${functionName}: ${String(error)}\n`);
  /** Reports a failure without ever throwing: a throwing callback must not kill a poller. */
  const reportError = (error: unknown) => {
    try { (options.onError ?? logError)(error); } catch (callbackError) { logError(callbackError); }
  };
  const countEvents = eventCounter(options.onEventCount, reportError);
  const awsRegion = queueArn.split(':')[3] ?? '';
  const counters = { invocations: 0, ok: 0, errors: 0, timeouts: 0, abandoned: 0, messagesDeleted: 0, inFlight: 0, maxObservedConcurrency: 0 };
  const stopping = new AbortController();
  const abandonHooks = new Set<() => void>();

  /** Gathers one batch: up to batchSize records, within the batching window once one arrived. */
  async function collectBatch(): Promise<Message[]> {
    const batch: Message[] = [];
    let windowEndsAtMs: number | undefined;
    while (batch.length < batchSize && !stopping.signal.aborted) {
      const remainingMs = windowEndsAtMs === undefined ? Infinity : windowEndsAtMs - nowMs();
      if (remainingMs <= 0) break;
      const waitSeconds = Math.min(POLL_WAIT_SECONDS, Math.floor(remainingMs / 1_000));
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(SQS_MAX_PER_REQUEST, batchSize - batch.length),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }));
      countEvents('PolledEventCount', Messages.length);
      batch.push(...Messages);
      if (batch.length === 0 || windowMs === 0) break;
      windowEndsAtMs ??= nowMs() + windowMs;
      if (Messages.length === 0 && waitSeconds === 0) await pause(Math.min(remainingMs, WINDOW_REPOLL_MS));
    }
    return batch;
  }

  /**
   * Invokes the handler with one batch; resolves with the batch's settlement (deleting the records
   * it did not report as failed, then reporting the invocation), which the poller runs beside its
   * next receive.
   */
  async function invoke(messages: readonly Message[]): Promise<() => Promise<void>> {
    const records = messages.map((message) => toSqsRecord(message, queueArn, awsRegion));
    const context = createLambdaContext({ functionName, timeoutMs: functionTimeoutMs, nowMs });
    const startedAtMs = nowMs();
    counters.invocations += 1;
    countEvents('InvokedEventCount', records.length);
    counters.inFlight += 1;
    counters.maxObservedConcurrency = Math.max(counters.maxObservedConcurrency, counters.inFlight);
    const result = await new Promise<Settled>((resolve) => {
      const abandon = () => resolve({ status: 'abandoned' });
      abandonHooks.add(abandon);
      void invokeWithTimeout(handler, { Records: records }, context, functionTimeoutMs + config.initPhaseLimitMs)
        .then(resolve, (error: unknown) => resolve({ status: 'error', error }))
        .finally(() => abandonHooks.delete(abandon));
    });
    counters.inFlight -= 1;
    const failedIds = result.status === 'ok'
      ? failedRecordIds(result.response, records, config.reportBatchItemFailures)
      : new Set(records.map((record) => record.messageId));
    counters[outcomeCounters[result.status]] += 1;
    countEvents('FailedInvokeEventCount', failedIds.size);
    const settled = records.filter((record) => !failedIds.has(record.messageId));
    const durationMs = nowMs() - startedAtMs;
    return async () => {
      await inChunks(settled, async (chunk) => {
        const { Successful = [] } = await sqs.send(new DeleteMessageBatchCommand({
          QueueUrl: queueUrl, Entries: chunk.map((record, index) => ({ Id: `m${index}`, ReceiptHandle: record.receiptHandle })),
        }));
        counters.messagesDeleted += Successful.length;
        countEvents('DeletedEventCount', Successful.length);
      });
      options.onInvocation?.({
        awsRequestId: context.awsRequestId,
        batchSize: records.length,
        outcome: result.status,
        failedMessageIds: [...failedIds],
        durationMs,
        ...(result.status === 'error' ? { error: result.error } : {}),
      });
    };
  }

  /** Hands back records received while stopping, so they need not wait out their visibility timeout. */
  async function release(messages: readonly Message[]): Promise<void> {
    await inChunks(messages, (chunk) => sqs.send(new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queueUrl,
      Entries: chunk.map((message, index) => ({ Id: `m${index}`, ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0 })),
    })));
  }

  /** Sleeps, but wakes up at once when stop() is called. */
  async function pause(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: stopping.signal }).catch(() => undefined);
  }

  /**
   * One poller: at most one invocation in flight, so pollers = maximumConcurrency caps concurrency.
   * On a standard queue its batch's delete runs beside its next receive, as Lambda keeps a busy
   * function busy: the records being deleted cannot come back meanwhile, being in flight until
   * their visibility timeout. It is done before the next invocation, so a poller has one delete in
   * flight at most and reports its invocations in order. On a FIFO queue the delete comes before
   * the receive, since a message group's next record stays hidden until the one before it is gone.
   */
  async function poll(): Promise<void> {
    let deleting: Promise<void> | undefined;
    while (!stopping.signal.aborted) {
      try {
        const messages = await collectBatch();
        await deleting;
        if (messages.length === 0) continue;
        if (stopping.signal.aborted) await release(messages);
        else if (fifo) await (await invoke(messages))();
        else deleting = (await invoke(messages))().catch(reportError);
      } catch (error) {
        reportError(error);
        await pause(POLL_ERROR_BACKOFF_MS);
      }
    }
    await deleting;
  }

  const pollers = Array.from({ length: config.maximumConcurrency }, () => poll());
  let stopped: Promise<void> | undefined;
  return {
    stop({ graceMs = functionTimeoutMs } = {}) {
      stopped ??= (async () => {
        stopping.abort();
        const grace = setTimeout(() => abandonHooks.forEach((abandon) => abandon()), graceMs);
        await Promise.all(pollers);
        clearTimeout(grace);
      })();
      return stopped;
    },
    stats: () => ({ ...counters }),
  };
}

/** Runs `send` on consecutive slices of at most 10 items, the SQS batch limit. */
async function inChunks<T>(items: readonly T[], send: (chunk: readonly T[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < items.length; start += SQS_MAX_PER_REQUEST) {
    await send(items.slice(start, start + SQS_MAX_PER_REQUEST));
  }
}

/** Rejects a configuration AWS would reject, naming the field, the value and the fix. */
function validate(config: ResolvedOptions, fifo: boolean): void {
  const ranges = [
    ['functionTimeoutMs', config.functionTimeoutMs, 1, MAX_FUNCTION_TIMEOUT_MS, 'pass the function timeout in milliseconds'],
    ['batchSize', config.batchSize, 1, fifo ? SQS_MAX_PER_REQUEST : 10_000, fifo ? 'FIFO queues take at most 10' : 'use 1 to 10000'],
    ['maximumBatchingWindowMs', config.maximumBatchingWindowMs, 0, fifo ? 0 : 300_000, fifo ? 'FIFO queues support no batching window' : 'use 0 to 300000'],
    ['maximumConcurrency', config.maximumConcurrency, 1, 1_000, 'use 2 to 1000 as on AWS (1 is allowed locally)'],
    ['initPhaseLimitMs', config.initPhaseLimitMs, 0, MAX_FUNCTION_TIMEOUT_MS, 'use 0 for in-process handlers or the runtime\'s INIT_PHASE_LIMIT_MS'],
  ] as const;
  for (const [field, value, min, max, fix] of ranges) {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`startSqsEventSource: ${field} must be an integer from ${min} to ${max}; got ${value}: ${fix}.`);
    }
  }
  if (config.batchSize > SQS_MAX_PER_REQUEST && config.maximumBatchingWindowMs < 1_000) {
    throw new RangeError(`startSqsEventSource: batchSize ${config.batchSize} needs maximumBatchingWindowMs of at least 1000; got ${config.maximumBatchingWindowMs}: raise the window or use batchSize 10 or less.`);
  }
  if (!config.functionName || !config.queueUrl) {
    throw new TypeError('startSqsEventSource: functionName and queueUrl must be non-empty strings; take them from the template.');
  }
  if (!/^arn:aws[\w-]*:sqs:[\w-]+:\d{12}:.+$/.test(config.queueArn)) {
    throw new TypeError(`startSqsEventSource: queueArn must look like arn:aws:sqs:<region>:<account>:<queue>; got ${config.queueArn}: read it with GetQueueAttributes QueueArn.`);
  }
}
