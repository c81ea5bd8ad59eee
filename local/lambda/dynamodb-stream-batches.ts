import type { DynamoDBRecord } from 'aws-lambda';
import type { BatchVerdict, DiscardCondition } from './dynamodb-stream-records.ts';

// The per-shard bookkeeping of a stream event source mapping, without I/O: which records form the
// next batch, and what a failure does to the batches after it (retry, bisect, skip). The poller
// feeds it records and verdicts; keeping it pure lets unit tests walk through Lambda's rules.

/**
 * How coarse DynamoDB Local's `ApproximateCreationDateTime` is: it truncates to the whole minute
 * (AWS truncates to the second), so a record read at 12:00:59 claims to be from 12:00:00.
 */
export const CREATION_TIME_GRANULARITY_MS = 60_000;

/** One record read from a shard and not yet checkpointed. */
export interface BufferedRecord {
  /** The record in Lambda's shape; each invocation gets a copy, so a handler cannot alter a retry. */
  readonly record: DynamoDBRecord;
  readonly sequenceNumber: string;
  /** When the poller read it: the batching window starts at the first buffered record's read. */
  readonly readAtMs: number;
  /** When it reached the stream, as well as can be told; maximumRecordAgeSeconds counts from it. */
  readonly arrivalMs: number;
  /** Invocations that included it, for the invocation record's approximateInvokeCount. */
  invokeCount: number;
  /** The last invocation that included it, for the invocation record's request and response. */
  lastInvocation?: { readonly requestId: string; readonly outcome: 'ok' | 'error' | 'timeout' };
}

/**
 * When a record reached the stream, as late as its reported creation time allows: the true time
 * lies within the granularity after the reported one and not after the record was read. Taking the
 * latest possible time means a record is never discarded for its age too early (it may live up to
 * a minute longer when read long after it was written), and a record read as it arrives ages from
 * the moment it was read, so short ages work locally despite the minute-truncated timestamp.
 */
export function estimateArrivalMs(reportedCreationMs: number | undefined, readAtMs: number): number {
  if (reportedCreationMs === undefined) return readAtMs;
  return Math.max(reportedCreationMs, Math.min(reportedCreationMs + CREATION_TIME_GRANULARITY_MS, readAtMs));
}

/** The next thing to do with the head of the shard: invoke with these records, or skip them. */
export interface PlannedBatch {
  readonly records: readonly BufferedRecord[];
  /** Set when the records are to be reported to the on-failure destination and skipped. */
  readonly discard?: DiscardCondition;
}

/** What settling an invocation led to, for summaries: the next step for the records still pending. */
export type Settlement = 'checkpoint' | 'retry' | 'bisect' | 'discard';

export interface ShardBatchesSettings {
  readonly batchSize: number;
  readonly bisectBatchOnFunctionError: boolean;
  /** -1: retry until the record expires. */
  readonly maximumRetryAttempts: number;
  /** -1: never too old. */
  readonly maximumRecordAgeMs: number;
}

/**
 * The records of one shard between read and checkpoint, and the batches planned for them.
 *
 * A fresh batch is up to batchSize buffered records. Once a batch failed, its records are retried as
 * that same batch (or its halves), never merged with newer records, so retries are counted per
 * batch: a whole failure without bisection counts one retry; bisection splits it in two and counts
 * none (as on AWS); a partial failure checkpoints the records before the lowest failed one and
 * retries the rest, as their first retry if the batch made progress. A batch whose retries exceed
 * maximumRetryAttempts, or that starts with records older than maximumRecordAgeMs, is handed out
 * for discarding: the caller reports it and then calls {@link skip}.
 */
export class ShardBatches {
  readonly #settings: ShardBatchesSettings;
  /** Read and not yet checkpointed, in stream order. */
  readonly #records: BufferedRecord[] = [];
  /** Batches planned from the head of #records (retries and halves); empty: the next one is fresh. */
  readonly #plan: { size: number; retries: number }[] = [];
  #checkpointed: string | undefined;

  constructor(settings: ShardBatchesSettings) {
    this.#settings = settings;
  }

  /** Records read and not yet checkpointed. */
  get buffered(): number {
    return this.#records.length;
  }

  /** The read time of the oldest buffered record: the start of the batching window. */
  get firstReadAtMs(): number | undefined {
    return this.#records[0]?.readAtMs;
  }

  /** The sequence number of the last record processed or skipped: the shard's checkpoint. */
  get checkpoint(): string | undefined {
    return this.#checkpointed;
  }

  /** Whether the next batch is already decided (a retry or a half), so no more records are needed. */
  get hasPlannedBatch(): boolean {
    return this.#plan.length > 0;
  }

  /** How many more records a fresh batch could take. */
  get room(): number {
    return Math.max(0, this.#settings.batchSize - this.#records.length);
  }

  append(records: readonly BufferedRecord[]): void {
    this.#records.push(...records);
  }

  /** The batch to work on now, or undefined when nothing is buffered. */
  next(nowMs: number): PlannedBatch | undefined {
    if (this.#plan.length === 0) {
      if (this.#records.length === 0) return undefined;
      this.#plan.push({ size: Math.min(this.#settings.batchSize, this.#records.length), retries: 0 });
    }
    const head = this.#plan[0] as { size: number; retries: number };
    const records = this.#records.slice(0, head.size);
    const { maximumRecordAgeMs, maximumRetryAttempts } = this.#settings;
    if (maximumRecordAgeMs >= 0) {
      // Records are in arrival order, so the expired ones are a prefix; the rest still get their turn.
      const young = records.findIndex((entry) => nowMs - entry.arrivalMs <= maximumRecordAgeMs);
      const expired = young < 0 ? records.length : young;
      if (expired > 0) return { records: records.slice(0, expired), discard: 'RecordAgeExceeded' };
    }
    if (maximumRetryAttempts >= 0 && head.retries > maximumRetryAttempts) return { records, discard: 'RetryAttemptsExhausted' };
    return { records };
  }

  /** Applies an invocation's verdict to the batch that {@link next} returned (and that was invoked). */
  settle(batch: PlannedBatch, verdict: BatchVerdict): Settlement {
    const head = this.#plan[0];
    if (!head || batch.records.length !== head.size || batch.records[0] !== this.#records[0]) {
      throw new Error('ShardBatches.settle: the batch is not the one at the head of the shard.');
    }
    if (verdict.kind === 'success') {
      this.#checkpoint(head.size);
      this.#plan.shift();
      return 'checkpoint';
    }
    if (verdict.kind === 'partial') {
      const done = verdict.firstFailedIndex;
      this.#checkpoint(done);
      head.size -= done;
      head.retries = done === 0 ? head.retries + 1 : 1;
    } else if (this.#settings.bisectBatchOnFunctionError && head.size > 1) {
      const firstHalf = Math.ceil(head.size / 2);
      this.#plan.splice(0, 1, { size: firstHalf, retries: head.retries }, { size: head.size - firstHalf, retries: head.retries });
      return 'bisect';
    } else {
      head.retries += 1;
    }
    const { maximumRetryAttempts } = this.#settings;
    return maximumRetryAttempts >= 0 && head.retries > maximumRetryAttempts ? 'discard' : 'retry';
  }

  /** Checkpoints past a discarded batch (after it was reported), leaving the rest of its plan. */
  skip(batch: PlannedBatch): void {
    const head = this.#plan[0];
    if (!head || batch.records[0] !== this.#records[0] || batch.records.length > head.size) {
      throw new Error('ShardBatches.skip: the batch is not the one at the head of the shard.');
    }
    this.#checkpoint(batch.records.length);
    head.size -= batch.records.length;
    if (head.size === 0) this.#plan.shift();
  }

  #checkpoint(count: number): void {
    const passed = this.#records.splice(0, count);
    this.#checkpointed = passed.at(-1)?.sequenceNumber ?? this.#checkpointed;
  }
}
