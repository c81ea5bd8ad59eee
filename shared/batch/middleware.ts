import type { MiddlewareObj } from '@middy/core';
import { trace } from '@opentelemetry/api';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { ChangeMessageVisibilityBatchCommand, DeleteMessageCommand, GetQueueUrlCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import { ClaimHeldError, FatalError, LockBusyError, REASONS, type BallastError } from '../errors/index.ts';
import type { IdempotencyStore, ScreenedRecords } from '../idempotency/index.ts';
import { lockKey } from '../lock/index.ts';
import { countByReason, METRICS, MetricUnit, type Observability } from '../observability/index.ts';
import { annotate, ATTRIBUTES, contextOfRecord, inSpan, SPANS, tracer } from '../tracing/index.ts';
import { deadLetterMessage, requeuedMessage, retryDelaySeconds, type BackoffOptions } from './disposition.ts';
import { processBatch } from './process-batch.ts';
import { runJob } from './run-job.ts';
import type { JobHandler, RecordOutcome } from './types.ts';

export interface SqsJobBatchOptions {
  /** The job types this worker runs, by `type`. */
  readonly jobs: readonly JobHandler[];
  readonly store: IdempotencyStore;
  readonly sqs: SQSClient;
  /** Where fatal records (and records out of retries) go, with their reason attributes. */
  readonly deadLetterQueueUrl: string;
  readonly observability: Observability;
  /** @default 5 — keep equal to the queue's redrive maxReceiveCount */
  readonly maxReceiveCount?: number;
  /** @default 10 */
  readonly concurrency?: number;
  /**
   * The resources a record's job touches (`jobResources(catalog, envelope)`): records sharing one
   * run one after another, and an external job locks them all in its claim. Must not throw.
   * @default - [envelope.resourceId]
   */
  readonly resourcesOf?: (envelope: Envelope) => readonly string[];
  /** @default 5_000 */
  readonly deadlineMarginMs?: number;
  /**
   * How long a record may wait for a held lock, from when its message was first sent: on its last
   * receive, a record whose resource is still locked is sent to its queue again as a new message
   * (its receives start over) instead of the DLQ, until it has waited this long. @default 3600
   */
  readonly maxLockWaitSeconds?: number;
  /** @default { baseSeconds: 2, maxSeconds: 300 } */
  readonly backoff?: BackoffOptions;
  /** @default Math.random */
  readonly random?: () => number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * Middy middleware that runs an SQS batch through ballast's per-record pipeline and answers the
 * invocation with `batchItemFailures` (the mapping needs `ReportBatchItemFailures`).
 *
 * It does the whole job in `before` and responds early, so it goes last in the chain; middlewares
 * registered before it still see the event first.
 *
 * @example
 * export const handler = middy<SQSEvent, SQSBatchResponse>().use(sqsJobBatch({ jobs, store, sqs, deadLetterQueueUrl, observability }));
 */
export function sqsJobBatch(options: SqsJobBatchOptions): MiddlewareObj<SQSEvent, SQSBatchResponse, Error, Context> {
  const handlers = new Map(options.jobs.map((job) => [job.type, job]));
  if (handlers.size !== options.jobs.length) throw new Error('sqsJobBatch: two jobs share a type; each type needs exactly one handler');
  const nowMs = options.nowMs ?? Date.now;
  const { logger, metrics, workerVersion } = options.observability;
  const queueUrls = new Map<string, Promise<string>>(); // immutable facts, cached per container

  const queueUrlOf = (arn: string): Promise<string> => {
    let url = queueUrls.get(arn);
    if (!url) {
      const [, , , , account, name] = arn.split(':');
      url = options.sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account })).then((out) => out.QueueUrl as string);
      url.catch(() => queueUrls.delete(arn));
      queueUrls.set(arn, url);
    }
    return url;
  };

  // A record's child logger is made on first use: most records never log (a success is counted
  // and summed up per batch), and making one costs more than the rest of the record's CPU.
  const recordLogger = (record: SQSRecord, envelope?: Envelope): (() => Logger) => {
    let child: Logger | undefined;
    return () => (child ??= logger.createChild({
      persistentKeys: {
        messageId: record.messageId,
        attempt: Number(record.attributes.ApproximateReceiveCount ?? 1),
        ...(envelope ? {
          jobId: envelope.jobId, jobType: envelope.type, idempotencyKey: envelope.idempotencyKey,
          lockKey: lockKey(envelope.resourceId), traceId: envelope.traceId,
        } : {}),
        ...otelTraceIdOf(record),
      },
    }));
  };

  // Asked twice per record (its lane, then its claim's locks): computed once, with one payload parse.
  const resources = new WeakMap<Envelope, readonly string[]>();
  const resourcesOf = options.resourcesOf && ((envelope: Envelope): readonly string[] => {
    let touched = resources.get(envelope);
    if (!touched) resources.set(envelope, (touched = options.resourcesOf?.(envelope) ?? [envelope.resourceId]));
    return touched;
  });

  /**
   * Deletes a record whose copy went to the DLQ or back to its queue. Now, not with the batch's
   * answer: a crash later in the invocation would otherwise bring the message back to be handled
   * again (or, if it now succeeds, run after its verdict). Should this delete fail, the answer
   * still deletes it (the record is not among its failures).
   */
  const deleteHandedOff = async (record: SQSRecord, how: 'dead-lettered' | 'requeued') => {
    await options.sqs.send(new DeleteMessageCommand({ QueueUrl: await queueUrlOf(record.eventSourceARN), ReceiptHandle: record.receiptHandle }))
      .catch((error: unknown) => logger.warn(`${how} record not deleted yet; the batch answer deletes it`, { error: error as Error }));
  };

  const sqsJobBatchMiddlewareBefore = async (request: { event: SQSEvent; context: Context }): Promise<SQSBatchResponse> => {
    const { event, context } = request;
    let conflicts = 0;
    let screened: ScreenedRecords | undefined;
    const outcomes = await processBatch(event.Records, {
      remainingTimeMs: () => context.getRemainingTimeInMillis(),
      deadlineMarginMs: options.deadlineMarginMs,
      concurrency: options.concurrency,
      maxReceiveCount: options.maxReceiveCount,
      resourcesOf,
      workerVersion,
      screen: async (envelopes) => {
        try {
          // Only one-shot commits use what is read: a claim cancels no one else's transaction.
          screened = await options.store.screen(envelopes.filter((envelope) => handlers.get(envelope.type)?.effects === 'dynamodb'));
        } catch (error) {
          // Screening only spares work; a read that keeps failing (a role without BatchGetItem on
          // the control table, throttling) must still show.
          logger.warn("screening the batch's idempotency records failed; its commits find duplicates themselves", { error: error as Error });
        }
      },
      run: async (record, envelope, signal, followers) => {
        const handler = handlers.get(envelope.type);
        if (!handler) throw new FatalError(REASONS.unknownJobType, `no handler for job type '${envelope.type}'`);
        const log = recordLogger(record, envelope);
        return runJob(envelope, handler, {
          store: options.store,
          resources: resourcesOf?.(envelope),
          attempt: Number(record.attributes.ApproximateReceiveCount ?? 1),
          logger: log,
          signal,
          followers,
          screened,
          onConflict: ({ operation, ...retry }) => {
            conflicts += 1;
            if (logger.getLevelName() === 'DEBUG') log().debug(`${operation} failed; retrying in place`, { reason: REASONS.transactionConflict, ...retry });
          },
          onHeartbeat: async () => {
            // Keep the message hidden for as long as the lease is held.
            const out = await options.sqs.send(new ChangeMessageVisibilityBatchCommand({
              QueueUrl: await queueUrlOf(record.eventSourceARN),
              Entries: [{ Id: '0', ReceiptHandle: record.receiptHandle, VisibilityTimeout: Math.ceil((options.store.leaseMs * 2) / 1000) }],
            }));
            // A batch call reports per-entry failures without throwing; the message may reappear.
            if (out.Failed?.length) throw new Error(`could not extend the message's visibility: ${out.Failed[0]?.Code} ${out.Failed[0]?.Message ?? ''}`);
          },
        });
      },
      requeue: async (record, error) => {
        const message = requeuedMessage(record, error, {
          nowMs: nowMs(), maxLockWaitMs: (options.maxLockWaitSeconds ?? 3_600) * 1000, backoff: options.backoff, random: options.random,
        });
        if (!message) return false;
        // A verdict waiting out its own claim's lease is no lock wait: neither its span nor the lock metrics count it.
        const heldClaim = error instanceof ClaimHeldError;
        try {
          const queueUrl = await queueUrlOf(record.eventSourceARN);
          await inSpan(heldClaim ? SPANS.visibilityBackoff : SPANS.lockWait, { attributes: waitAttributes(error, message.DelaySeconds) }, async (span) => {
            await options.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, ...message }));
            if (!heldClaim) span.setAttribute(ATTRIBUTES.lockRequeued, true);
          });
          if (!heldClaim) metrics.addMetric(METRICS.lockWaitMs, MetricUnit.Milliseconds, message.DelaySeconds * 1000);
          await deleteHandedOff(record, 'requeued');
          return true;
        } catch (sendError) {
          logger.warn('could not requeue a record waiting for a lock; it goes to the DLQ', { error: sendError as Error });
          return false;
        }
      },
      deadLetter: async (record, error, envelope) => {
        await inSpan(SPANS.dlqSend, { attributes: { [ATTRIBUTES.reason]: error.reason } }, () => options.sqs.send(new SendMessageCommand({
          QueueUrl: options.deadLetterQueueUrl,
          ...deadLetterMessage(record, error, envelope, { workerVersion, nowMs: nowMs() }),
        })));
        await deleteHandedOff(record, 'dead-lettered');
      },
    });
    await backOff(outcomes);
    report(outcomes);
    if (conflicts > 0) metrics.addMetric(METRICS.commitConflicts, MetricUnit.Count, conflicts);
    metrics.publishStoredMetrics();
    return { batchItemFailures: outcomes.filter((o) => o.status === 'retry').map((o) => ({ itemIdentifier: o.record.messageId })) };
  };

  /** Pushes each retried record's next appearance out by its backoff (10 entries per call). */
  const backOff = async (outcomes: readonly RecordOutcome[]) => {
    const retried = outcomes.filter((o): o is Extract<RecordOutcome, { status: 'retry' }> => o.status === 'retry')
      .map((o) => ({ ...o, visibilitySeconds: retryDelaySeconds(o.record, o.error, options.backoff, options.random) }));
    for (const o of retried) if (o.error instanceof LockBusyError) metrics.addMetric(METRICS.lockWaitMs, MetricUnit.Milliseconds, o.visibilitySeconds * 1000);
    const byQueue = Map.groupBy(retried, (o) => o.record.eventSourceARN);
    for (const [arn, group] of byQueue) {
      const queueUrl = await queueUrlOf(arn).catch(() => undefined);
      if (!queueUrl) continue; // the records still reappear after the queue's visibility timeout
      for (let start = 0; start < group.length; start += 10) {
        const slice = group.slice(start, start + 10);
        const entries = slice.map((o, i) => ({ Id: String(i), ReceiptHandle: o.record.receiptHandle, VisibilityTimeout: o.visibilitySeconds }));
        const spans = slice.map((o) => backoffSpan(o, o.visibilitySeconds));
        await options.sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: entries }))
          .then((out) => {
            if (out.Failed?.length) logger.warn('could not back off some retried records; they reappear after the visibility timeout', { failed: out.Failed });
          })
          .catch((error: unknown) => logger.warn('could not back off retried records', { error: error as Error }))
          .finally(() => spans.forEach((span) => span.end()));
      }
    }
  };

  /**
   * Counts the batch's outcomes, one metric value per kind (and per reason) rather than one per
   * record, and logs each failure with its record's keys. Successes are not logged one by one
   * (their idempotency records say which job completed when; a line per record would cost more
   * log ingestion than the record's compute): the batch's summary line is INFO when something
   * failed, DEBUG otherwise, and at DEBUG (`POWERTOOLS_LOG_LEVEL=DEBUG`) each success has its line.
   */
  const report = (outcomes: readonly RecordOutcome[]) => {
    const summary = batchSummary(outcomes);
    if (summary.processed > 0) metrics.addMetric(METRICS.processed, MetricUnit.Count, summary.processed);
    if (summary.duplicates > 0) metrics.addMetric(METRICS.duplicates, MetricUnit.Count, summary.duplicates);
    const byReason = { [METRICS.retries]: new Map<string, number>(), [METRICS.sentToDlq]: new Map<string, number>() };
    const debug = logger.getLevelName() === 'DEBUG';
    for (const outcome of outcomes) {
      const log = recordLogger(outcome.record, outcome.envelope);
      // A held claim's requeue is a retry in all but name (its receives start over so that it is
      // never dead-lettered holding its claim): counted and logged with the retries below.
      const heldClaim = outcome.status === 'requeued' && outcome.error instanceof ClaimHeldError;
      if (outcome.status === 'requeued' && !heldClaim) {
        countContention(outcome.error);
        metrics.addMetric(METRICS.lockRequeues, MetricUnit.Count, 1);
        log().warn('job requeued: still waiting for its resource on its last receive (a held lock, or its lane until the deadline)', errorFields(outcome.error));
        continue;
      }
      if (outcome.status !== 'retry' && outcome.status !== 'dead-lettered' && !heldClaim) {
        if (debug) log().debug(outcome.status === 'processed' ? 'job processed' : 'duplicate suppressed');
        continue;
      }
      const metric = outcome.status === 'dead-lettered' ? METRICS.sentToDlq : METRICS.retries;
      byReason[metric].set(outcome.error.reason, (byReason[metric].get(outcome.error.reason) ?? 0) + 1);
      if (heldClaim) {
        log().warn("job requeued: its claim could not be given back, and its last receive waits out the claim's lease", errorFields(outcome.error));
      } else if (outcome.status === 'retry') {
        countContention(outcome.error);
        log().warn('job will be retried', errorFields(outcome.error));
      } else {
        log().error('job sent to DLQ', errorFields(outcome.error));
      }
    }
    for (const [metric, counts] of Object.entries(byReason)) {
      for (const [reason, count] of counts) countByReason(options.observability, metric, reason, count);
    }
    if (summary.retried + summary.requeued + summary.deadLettered > 0) logger.info('batch done', summary);
    else logger.debug('batch done', summary);
  };

  const countContention = (error: BallastError) => {
    if (error instanceof LockBusyError) {
      metrics.addMetric(METRICS.lockContention, MetricUnit.Count, 1);
    }
    if (error.reason === REASONS.fenced) metrics.addMetric(METRICS.fenced, MetricUnit.Count, 1);
  };

  return { before: sqsJobBatchMiddlewareBefore };
}

/**
 * A retried record's backoff, in its job's trace: `lock_wait` when a held lease refused it (the
 * message waits to try the lock again), `visibility_backoff` otherwise.
 */
function backoffSpan(outcome: Extract<RecordOutcome, { status: 'retry' }>, backoffSeconds: number) {
  const span = tracer().startSpan(outcome.error instanceof LockBusyError ? SPANS.lockWait : SPANS.visibilityBackoff, {}, contextOfRecord(outcome.record));
  annotate(span, () => waitAttributes(outcome.error, backoffSeconds));
  return span;
}

/** What a record waits for before its next try: how long, why, and the lock (and its lease) when one is held. */
function waitAttributes(error: BallastError, backoffSeconds: number) {
  return {
    [ATTRIBUTES.backoffSeconds]: backoffSeconds, [ATTRIBUTES.reason]: error.reason,
    ...(error.context.lockKey === undefined ? {} : { [ATTRIBUTES.lockKeys]: String(error.context.lockKey) }),
    ...(error.context.leaseUntilMs === undefined ? {} : { [ATTRIBUTES.lockHeldUntilMs]: Number(error.context.leaseUntilMs) }),
  };
}

/**
 * The OpenTelemetry trace the record continues (`ballast trace <otelTraceId>`), when its producer
 * sent one: the envelope's `traceId` is the producer's log key and need not be a trace id.
 */
function otelTraceIdOf(record: SQSRecord): { otelTraceId?: string } {
  const spanContext = trace.getSpanContext(contextOfRecord(record));
  return spanContext ? { otelTraceId: spanContext.traceId } : {};
}

/** How many records of the batch ended which way: its metrics and its summary line. */
function batchSummary(outcomes: readonly RecordOutcome[]) {
  const count = (status: RecordOutcome['status']) => outcomes.filter((o) => o.status === status).length;
  return { records: outcomes.length, processed: count('processed'), duplicates: count('duplicate'), retried: count('retry'), requeued: count('requeued'), deadLettered: count('dead-lettered') };
}

function errorFields(error: BallastError) {
  return { reason: error.reason, errorName: error.name, errorMessage: error.message, ...error.context };
}
