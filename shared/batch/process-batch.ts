import type { SQSRecord } from 'aws-lambda';
import { parseEnvelope, type Envelope } from '../envelope/index.ts';
import { classify, FatalError, REASONS, TransientError, type BallastError } from '../errors/index.ts';
import { payloadHash, type Completion } from '../idempotency/index.ts';
import { withDefaults } from '../options/index.ts';
import type { RecordOutcome } from './types.ts';

export interface ProcessBatchOptions {
  /** Runs one record whose envelope parsed; throws to fail it. */
  readonly run: (record: SQSRecord, envelope: Envelope, signal: AbortSignal) => Promise<Completion>;
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
  readonly envelope?: Envelope;
  readonly parseError?: BallastError;
}

/**
 * The per-record pipeline of one SQS batch, free of Lambda and Middy:
 * parse → collapse in-batch duplicates → lanes: records that share a resource, directly or
 * through other records, in one lane (one lane per message group on FIFO queues), lanes
 * concurrently up to a limit, records within a lane in order → deadline guard → run → classify.
 * Resolves with one outcome per record, in input order; never throws.
 */
export async function processBatch(records: readonly SQSRecord[], options: ProcessBatchOptions): Promise<RecordOutcome[]> {
  const settings = withDefaults(defaults, options);
  const fifo = records[0]?.eventSourceARN.endsWith('.fifo') ?? false;
  const outcomes: RecordOutcome[] = new Array(records.length);
  const units = records.map((record, index) => parse(record, index));

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
  const runUnit = (unit: Unit, blocked: boolean): Promise<RecordOutcome> =>
    startUnit(unit, blocked).catch((error: unknown) => settle(unit, classify(error)));

  const startUnit = async (unit: Unit, blocked: boolean): Promise<RecordOutcome> => {
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
        return settle(unit, new TransientError(REASONS.deadline, `not started: ${settings.remainingTimeMs()} ms left, margin ${settings.deadlineMarginMs} ms`));
      }
      try {
        const completion = await settings.run(record, envelope, deadline.signal);
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
      try {
        await settings.deadLetter(unit.record, error, unit.envelope);
        return { record: unit.record, status: 'dead-lettered', error, envelope: unit.envelope };
      } catch (sendError) {
        return retry(unit, classify(sendError));
      }
    }
    return retry(unit, error);
  };

  const queue = [...lanes.values()];
  const worker = async () => {
    for (let lane = queue.shift(); lane; lane = queue.shift()) {
      let blocked = false;
      for (const unit of lane) {
        const outcome = await runUnit(unit, blocked);
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
  try {
    return { index, record, envelope: parseEnvelope(record.body) };
  } catch (error) {
    return { index, record, parseError: classify(error) };
  }
}

function retry(unit: Unit, error: BallastError): RecordOutcome {
  return { record: unit.record, status: 'retry', error, envelope: unit.envelope };
}
