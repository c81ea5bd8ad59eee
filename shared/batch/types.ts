import type { SQSRecord } from 'aws-lambda';
import type { Schema } from '../validation/index.ts';
import type { Envelope } from '../envelope/index.ts';
import type { BallastError } from '../errors/index.ts';
import type { Claim, CommitPlan } from '../idempotency/index.ts';
import type { Logger } from '@aws-lambda-powertools/logger';

/** What a job's code gets for one record. */
export interface JobContext<P> {
  readonly envelope: Envelope;
  /** The envelope's payload, validated by the handler's schema. */
  readonly payload: P;
  /** SQS receive count of this message (1 on first delivery). */
  readonly attempt: number;
  readonly logger: Logger;
  /** Aborted when the job's lease is lost or the invocation is about to time out. */
  readonly signal: AbortSignal;
}

/** A job whose effects are all DynamoDB writes: planned, then committed atomically with its record. */
export interface TransactionalJob<P> {
  readonly type: string;
  readonly payload: Schema<P>;
  readonly effects: 'dynamodb';
  plan(job: JobContext<P>): CommitPlan | Promise<CommitPlan>;
}

/**
 * A job with an external side effect: it runs under a claim (IN_PROGRESS record + the resource's
 * lease lock, whose `fence` it may pass on) and returns what to commit afterwards.
 */
export interface ExternalJob<P> {
  readonly type: string;
  readonly payload: Schema<P>;
  readonly effects: 'external';
  perform(job: JobContext<P> & { readonly claim: Claim }): Promise<CommitPlan>;
}

export type JobHandler<P = any> = TransactionalJob<P> | ExternalJob<P>;

/** The fate of one SQS record after a batch. */
export type RecordOutcome =
  | { readonly record: SQSRecord; readonly status: 'processed' | 'duplicate'; readonly envelope: Envelope }
  /** Retried later: reported in batchItemFailures. */
  | { readonly record: SQSRecord; readonly status: 'retry'; readonly error: BallastError; readonly envelope?: Envelope }
  /**
   * Still meeting a held lock on its last receive: sent to its queue again as a new message (its
   * receives start over, see `requeuedMessage`) and deleted from the source.
   */
  | { readonly record: SQSRecord; readonly status: 'requeued'; readonly error: BallastError; readonly envelope?: Envelope }
  /** Sent to the DLQ with its reason; deleted from the source. */
  | { readonly record: SQSRecord; readonly status: 'dead-lettered'; readonly error: BallastError; readonly envelope?: Envelope };
