import { SpanKind, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import type { SQSRecord } from 'aws-lambda';
import { parseEnvelope, type Envelope } from '../envelope/index.ts';
import { classify, FatalError, LaneWaitError, REASONS, TransientError, waitedForResource, type BallastError } from '../errors/index.ts';
import { payloadHash, type Completion } from '../idempotency/index.ts';
import { withDefaults } from '../options/index.ts';
import { annotate, ATTRIBUTES, contextOfRecord, failSpan, SPANS, tracer } from '../tracing/index.ts';
import type { RecordOutcome } from './types.ts';

export interface ProcessBatchOptions {
  /**
   * Runs one record whose envelope parsed; throws to fail it. `followers` is how many records wait
   * behind it in its lane: a commit others wait on is grouped apart from those nothing waits on
   * (see `GroupCommitOptions`). Lanes beyond `concurrency`, queued for the next free worker, are not
   * counted (with the defaults, ten lanes at once for batches of ten, there are none).
   */
  readonly run: (record: SQSRecord, envelope: Envelope, signal: AbortSignal, followers: number) => Promise<Completion>;
  /**
   * Called once per batch with the parsed envelopes of the records that wait for it (the worker lets
   * the idempotency store screen their records, see `IdempotencyStore.screen`): every record but the
   * heads of lanes that go on, which start at once. A screen costs a round trip; on a head that
   * others wait behind it would lengthen the whole lane, where the other records' wait overlaps
   * those heads' commits. What it throws is ignored: screening only spares work. @default - none
   */
  readonly screen?: (envelopes: readonly Envelope[]) => Promise<void>;
  /**
   * On its last receive, a record whose claim met a lock another job holds (`LockBusyError`), or
   * that was not started before the deadline after waiting behind earlier records of its lane that
   * ran (`LaneWaitError`), comes here before the DLQ: waiting behind a busy resource is not failing. Resolves true when the
   * record was sent to its queue again as a new message (its receives start over; the original is
   * deleted, by the callback or else by the batch's answer); false or a throw sends it to the DLQ
   * as before. @default - none: such a record is dead-lettered with its reason (`lock-busy`, `deadline`)
   */
  readonly requeue?: (record: SQSRecord, error: BallastError, envelope?: Envelope) => Promise<boolean>;
  /** Sends a record to the DLQ with its error; throws if it could not (the record is then retried). */
  readonly deadLetter: (record: SQSRecord, error: BallastError, envelope?: Envelope) => Promise<void>;
  /** Time left in the invocation (Lambda's `context.getRemainingTimeInMillis`). */
  readonly remainingTimeMs: () => number;
  /**
   * A record is not started with less time than this left: it is reported failed and reappears.
   * @default 5_000
   */
  readonly deadlineMarginMs?: number;
  /**
   * How many lanes (resources, or FIFO groups) are processed at once.
   * @default 10
   */
  readonly concurrency?: number;
  /**
   * The queue's maxReceiveCount: on the last receive a transient failure goes to the DLQ with its
   * reason instead of being redriven by SQS without one.
   * @default 5
   */
  readonly maxReceiveCount?: number;
  /**
   * The resources a record's job touches (a transfer: both accounts), so that records sharing any
   * of them run one after another, in input order. Called with the parsed envelope; it must not
   * throw (return [envelope.resourceId] when unsure). Not used on FIFO queues, whose lanes are
   * their message groups.
   * @default - [envelope.resourceId]
   */
  readonly resourcesOf?: (envelope: Envelope) => readonly string[];
  /** Stamped on the batch's and records' spans. @default - none */
  readonly workerVersion?: string;
}

const defaults = {
  deadlineMarginMs: 5_000,
  concurrency: 10,
  maxReceiveCount: 5,
  resourcesOf: (envelope: Envelope): readonly string[] => [envelope.resourceId],
};

interface Unit {
  readonly index: number;
  readonly record: SQSRecord;
  /** The trace context the producer sent with the message (the root context when none). */
  readonly parent: Context;
  readonly envelope?: Envelope;
  readonly parseError?: BallastError;
}

/**
 * The per-record pipeline of one SQS batch, free of Lambda and Middy:
 * parse → lanes: records that share a resource, directly or through other records, in one lane (one
 * lane per message group on FIFO queues), lanes concurrently up to a limit, records within a lane in
 * order → screen (all but the heads of lanes that go on) → collapse in-batch duplicates → deadline
 * guard → run → classify.
 * Resolves with one outcome per record, in input order; never throws.
 */
export async function processBatch(records: readonly SQSRecord[], options: ProcessBatchOptions): Promise<RecordOutcome[]> {
  const units = records.map((record, index) => parse(record, index));
  // The batch is its own span (its invocation's child), linked to every record's trace; each
  // record continues its producer's trace and links back to the batch.
  const links = units.flatMap((unit): Link[] => {
    const spanContext = trace.getSpanContext(unit.parent);
    return spanContext ? [{ context: spanContext }] : [];
  });
  return tracer().startActiveSpan(SPANS.batch, { kind: SpanKind.CONSUMER, links }, async (batchSpan) => {
    annotate(batchSpan, () => ({
      [ATTRIBUTES.messagingSystem]: 'aws_sqs', 'messaging.batch.message_count': records.length,
      ...(options.workerVersion ? { [ATTRIBUTES.workerVersion]: options.workerVersion } : {}),
    }));
    try {
      return await processUnits(units, options, batchSpan);
    } finally {
      batchSpan.end();
    }
  });
}

async function processUnits(units: readonly Unit[], options: ProcessBatchOptions, batchSpan: Span): Promise<RecordOutcome[]> {
  const settings = withDefaults(defaults, options);
  const fifo = units[0]?.record.eventSourceARN.endsWith('.fifo') ?? false;
  const outcomes: RecordOutcome[] = new Array(units.length);
  const receivedMs = Date.now();

  // In-batch duplicates (same key, same payload) wait for their first copy and share its fate.
  const leaders = new Map<string, Promise<RecordOutcome>>();
  const lanes = new Map<string, Unit[]>();
  const laneOf = fifo ? groupLane : resourceLanes(units, settings.resourcesOf);
  for (const unit of units) {
    const lane = laneOf(unit);
    lanes.set(lane, [...(lanes.get(lane) ?? []), unit]);
  }

  const deadline = new AbortController();
  const deadlineTimer = setTimeout(() => deadline.abort(new TransientError(REASONS.deadline, 'invocation deadline')),
    Math.max(0, settings.remainingTimeMs() - settings.deadlineMarginMs / 2));
  deadlineTimer.unref();

  // Whatever one record throws stays that record's failure: the batch itself never throws.
  // Records whose job was handed to `run`: a record behind one of them in its lane waited for its resources.
  const started = new Set<Unit>();

  /** `blocked`: an earlier message of its FIFO group failed; `waited`: an earlier record of its lane ran. */
  const runUnit = (unit: Unit, place: { blocked: boolean; waited: boolean }, followers: number): Promise<RecordOutcome> => {
    queueWaitSpan(unit, receivedMs);
    return tracer().startActiveSpan(SPANS.record, { kind: SpanKind.CONSUMER, links: [{ context: batchSpan.spanContext() }] }, unit.parent, async (span) => {
      annotate(span, () => recordAttributes(unit, options.workerVersion));
      const outcome = await startUnit(unit, place, followers).catch((error: unknown) => settle(unit, classify(error)));
      annotate(span, () => ({ [ATTRIBUTES.outcome]: outcome.status }));
      if (outcome.status === 'retry' || outcome.status === 'dead-lettered') failSpan(span, outcome.error);
      span.end();
      return outcome;
    });
  };

  const startUnit = async (unit: Unit, { blocked, waited }: { blocked: boolean; waited: boolean }, followers: number): Promise<RecordOutcome> => {
    const { record, envelope } = unit;
    if (unit.parseError) return settle(unit, unit.parseError);
    if (!envelope) throw new Error('unreachable: a unit has an envelope or a parse error');
    // Records that never ran still go through settle(): on their last receive they are
    // dead-lettered with a reason instead of being redriven by SQS without one.
    if (blocked) return settle(unit, new TransientError(REASONS.groupBlocked, 'an earlier message of this FIFO group failed'));
    const key = `${envelope.idempotencyKey}\u0000${payloadHash(envelope)}`;
    const leader = leaders.get(key);
    if (leader) {
      const first = await leader;
      return first.status === 'retry' ? settle(unit, first.error) : { record, status: 'duplicate', envelope };
    }
    const own = (async (): Promise<RecordOutcome> => {
      if (settings.remainingTimeMs() < settings.deadlineMarginMs) {
        const notStarted = `not started: ${settings.remainingTimeMs()} ms left, margin ${settings.deadlineMarginMs} ms`;
        // Behind earlier records of its lane that ran, it waited for its resources, as a job
        // meeting a held lock does, and is treated alike (requeued rather than dead-lettered on its
        // last receive): a hot resource's convoy would otherwise lose its tail to the DLQ. A lane
        // that never got a worker, and a FIFO group's next message, only ran out of time.
        return settle(unit, waited
          ? new LaneWaitError(`${notStarted}, after waiting behind earlier records of its lane (sharing its resources) that ran`)
          : new TransientError(REASONS.deadline, notStarted));
      }
      try {
        started.add(unit);
        const completion = await settings.run(record, envelope, deadline.signal, followers);
        return { record, status: completion.kind === 'committed' ? 'processed' : 'duplicate', envelope };
      } catch (error) {
        return settle(unit, classify(error));
      }
    })();
    leaders.set(key, own);
    return own;
  };

  const settle = async (unit: Unit, error: BallastError): Promise<RecordOutcome> => {
    const attempt = Number(unit.record.attributes.ApproximateReceiveCount ?? 1);
    if (error instanceof FatalError || attempt >= settings.maxReceiveCount) {
      if (waitedForResource(error) && options.requeue
        && await options.requeue(unit.record, error, unit.envelope).catch(() => false)) {
        return { record: unit.record, status: 'requeued', error, envelope: unit.envelope };
      }
      try {
        await settings.deadLetter(unit.record, error, unit.envelope);
        return { record: unit.record, status: 'dead-lettered', error, envelope: unit.envelope };
      } catch (sendError) {
        return retry(unit, classify(sendError));
      }
    }
    return retry(unit, error);
  };

  // The heads of lanes that go on (see `screen`).
  const startAtOnce = new Set([...lanes.values()].flatMap((lane) => (lane.length > 1 ? [lane[0] as Unit] : [])));
  const screening = options.screen?.(units.flatMap((unit) => (unit.envelope && !startAtOnce.has(unit) ? [unit.envelope] : []))).catch(() => undefined);
  const queue = [...lanes.values()];
  const worker = async () => {
    for (let lane = queue.shift(); lane; lane = queue.shift()) {
      let blocked = false;
      for (const [position, unit] of lane.entries()) {
        if (!startAtOnce.has(unit)) await screening;
        const waited = !fifo && lane.slice(0, position).some((earlier) => started.has(earlier));
        const outcome = await runUnit(unit, { blocked, waited }, lane.length - 1 - position);
        outcomes[unit.index] = outcome;
        if (fifo && outcome.status === 'retry') blocked = true;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(settings.concurrency, queue.length) }, worker));
  } finally {
    clearTimeout(deadlineTimer);
  }
  return outcomes;
}

function groupLane(unit: Unit): string {
  return `group:${unit.record.attributes.MessageGroupId ?? ''}`;
}

/**
 * Lane keys for a standard queue: the connected components of "shares a resource" (union-find
 * over resource ids), so X [a, b], Y [b, c] and Z [c] share one lane although X and Z share nothing.
 */
function resourceLanes(units: readonly Unit[], resourcesOf: (envelope: Envelope) => readonly string[]): (unit: Unit) => string {
  // Roots are absent from the map. Only roots are ever re-parented, so the chains never cycle;
  // path halving keeps them short.
  const parent = new Map<string, string>();
  const root = (id: string): string => {
    let node = id;
    for (let up = parent.get(node); up !== undefined; up = parent.get(node)) {
      const grand = parent.get(up) ?? up;
      parent.set(node, grand);
      node = grand;
    }
    return node;
  };
  const anchors = units.map((unit) => {
    if (!unit.envelope) return undefined;
    const [first, ...rest] = touched(unit.envelope, resourcesOf);
    const top = root(first);
    for (const id of rest) {
      const other = root(id);
      if (other !== top) parent.set(other, top);
    }
    return first;
  });
  return (unit) => {
    const anchor = anchors[unit.index];
    return anchor === undefined ? `record:${unit.index}` : `resource:${root(anchor)}`;
  };
}

/** A callback that throws or names nothing must not crash the batch: the record keeps its own resource. */
function touched(envelope: Envelope, resourcesOf: (envelope: Envelope) => readonly string[]): [string, ...string[]] {
  try {
    const [first, ...rest] = resourcesOf(envelope);
    if (first !== undefined) return [first, ...rest];
  } catch {
    // fall back below
  }
  return [envelope.resourceId];
}

function parse(record: SQSRecord, index: number): Unit {
  const parent = contextOfRecord(record);
  try {
    return { index, record, parent, envelope: parseEnvelope(record.body) };
  } catch (error) {
    return { index, record, parent, parseError: classify(error) };
  }
}

function recordAttributes(unit: Unit, workerVersion: string | undefined) {
  const { record, envelope } = unit;
  return {
    [ATTRIBUTES.messagingSystem]: 'aws_sqs',
    [ATTRIBUTES.messageId]: record.messageId,
    [ATTRIBUTES.attempt]: Number(record.attributes.ApproximateReceiveCount ?? 1),
    ...(workerVersion ? { [ATTRIBUTES.workerVersion]: workerVersion } : {}),
    ...(envelope ? {
      [ATTRIBUTES.jobId]: envelope.jobId, [ATTRIBUTES.jobType]: envelope.type,
      [ATTRIBUTES.idempotencyKey]: envelope.idempotencyKey, [ATTRIBUTES.resource]: envelope.resourceId,
    } : {}),
  };
}

/** The message's time on the queue, from SQS's `SentTimestamp` to this batch (this delivery's wait). */
function queueWaitSpan(unit: Unit, receivedMs: number): void {
  const sentMs = Number(unit.record.attributes.SentTimestamp);
  if (!Number.isFinite(sentMs) || sentMs <= 0) return;
  const span = tracer().startSpan(SPANS.queueWait, { startTime: sentMs }, unit.parent);
  annotate(span, () => ({ [ATTRIBUTES.attempt]: Number(unit.record.attributes.ApproximateReceiveCount ?? 1), [ATTRIBUTES.messageId]: unit.record.messageId }));
  span.end(Math.max(sentMs, receivedMs));
}

function retry(unit: Unit, error: BallastError): RecordOutcome {
  return { record: unit.record, status: 'retry', error, envelope: unit.envelope };
}
