import { Construct } from 'constructs';
import { Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Queue, QueueEncryption, RedrivePermission, type DeadLetterQueue } from 'aws-cdk-lib/aws-sqs';
import { stackInstanceSuffix } from './physical-name.ts';
import { BallastConfigError } from './validation.ts';

/** maxReceiveCount below this turns brief throttling into dead letters. */
export const MIN_MAX_RECEIVE_COUNT = 5;
/** AWS's rule of thumb for Lambda consumers: visibility ≥ 6 × function timeout + batching window. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** The shortest safe visibility timeout for a consumer: 6 × its timeout + its batching window. */
export function minimumVisibilityTimeoutSeconds(consumerTimeout: Duration, maxBatchingWindow: Duration = Duration.seconds(0)): number {
  return VISIBILITY_TIMEOUT_FACTOR * consumerTimeout.toSeconds() + maxBatchingWindow.toSeconds();
}

export interface ReliableQueueProps {
  /**
   * Timeout of the function that consumes the queue; the visibility timeout is derived from it.
   */
  readonly consumerTimeout: Duration;
  /**
   * The consumer's event source mapping batching window.
   * @default Duration.seconds(0)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * Visibility timeout. Refused when below 6 × `consumerTimeout` + `maxBatchingWindow`, because a
   * message would reappear (and run twice) while its first delivery is still being processed.
   * @default - 6 × consumerTimeout + maxBatchingWindow
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Receives a consumer gives a message before it dead-letters the message itself, with its reason
   * (ballast's worker reads it as `MAX_RECEIVE_COUNT`). At least 5.
   * @default 5
   */
  readonly maxReceiveCount?: number;
  /**
   * Extra receives before SQS's own redrive moves a message to the DLQ, without a reason. Only a
   * message whose invocations crashed or timed out on its last receives gets there: with a
   * backstop of 0 a crash on the last receive would redrive it unlabelled, so the consumer's
   * verdict would be lost. Use 0 for consumers that never dead-letter themselves.
   * @default 3
   */
  readonly redriveBackstop?: number;
  /**
   * FIFO queue (and FIFO DLQ); names get the `.fifo` suffix, content-based deduplication is off
   * (producers set deduplication ids).
   * @default false
   */
  readonly fifo?: boolean;
  /**
   * How long a message may wait in the queue.
   * @default Duration.days(4)
   */
  readonly retentionPeriod?: Duration;
  /**
   * How long a dead letter is kept; must be longer than `retentionPeriod`, so a message is never
   * dropped by the DLQ before the source would have dropped it.
   * @default Duration.days(14)
   */
  readonly deadLetterRetentionPeriod?: Duration;
  /**
   * @default QueueEncryption.SQS_MANAGED
   */
  readonly encryption?: QueueEncryption;
  /**
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * A queue and its DLQ built the way a Lambda consumer needs them: same type, longer DLQ retention,
 * redrive allowed only from this queue, TLS enforced, encrypted, a visibility timeout derived from
 * the consumer's timeout, and maxReceiveCount ≥ 5 with SQS's own redrive a few receives later (a
 * backstop for crashed invocations). Invalid combinations are refused at synth.
 */
export class ReliableQueue extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly maxReceiveCount: number;
  /** Receives before SQS redrives a message: `maxReceiveCount` + `redriveBackstop`. */
  readonly redriveReceiveCount: number;
  readonly retentionPeriod: Duration;
  readonly deadLetterRetentionPeriod: Duration;
  readonly visibilityTimeout: Duration;

  constructor(scope: Construct, id: string, props: ReliableQueueProps) {
    super(scope, id);
    const window = props.maxBatchingWindow ?? Duration.seconds(0);
    const minimumVisibilitySeconds = minimumVisibilityTimeoutSeconds(props.consumerTimeout, window);
    const visibility = props.visibilityTimeout ?? Duration.seconds(minimumVisibilitySeconds);
    this.visibilityTimeout = visibility;
    if (visibility.toSeconds() < minimumVisibilitySeconds) {
      throw new BallastConfigError(this, `visibilityTimeout ${visibility.toSeconds()} s is below 6 × consumer timeout `
        + `(${props.consumerTimeout.toSeconds()} s) + batching window (${window.toSeconds()} s) = ${minimumVisibilitySeconds} s: `
        + `raise visibilityTimeout to at least ${minimumVisibilitySeconds} s, or leave it unset to derive it.`);
    }
    if (visibility.toSeconds() > 43_200) {
      throw new BallastConfigError(this, `visibilityTimeout ${visibility.toSeconds()} s exceeds SQS's 12 hours: lower the consumer timeout.`);
    }
    this.maxReceiveCount = props.maxReceiveCount ?? MIN_MAX_RECEIVE_COUNT;
    if (!Number.isInteger(this.maxReceiveCount) || this.maxReceiveCount < MIN_MAX_RECEIVE_COUNT) {
      throw new BallastConfigError(this, `maxReceiveCount ${this.maxReceiveCount} is below ${MIN_MAX_RECEIVE_COUNT}: `
        + `set maxReceiveCount to ${MIN_MAX_RECEIVE_COUNT} or more, so throttling and brief outages are retried rather than dead-lettered.`);
    }
    const backstop = props.redriveBackstop ?? 3;
    if (!Number.isInteger(backstop) || backstop < 0 || backstop > 10) {
      throw new BallastConfigError(this, `redriveBackstop ${backstop} must be an integer from 0 to 10: 3 leaves room for an invocation crashing on a message's last receives.`);
    }
    this.redriveReceiveCount = this.maxReceiveCount + backstop;
    this.retentionPeriod = props.retentionPeriod ?? Duration.days(4);
    this.deadLetterRetentionPeriod = props.deadLetterRetentionPeriod ?? Duration.days(14);
    if (this.deadLetterRetentionPeriod.toSeconds() <= this.retentionPeriod.toSeconds()) {
      throw new BallastConfigError(this, `deadLetterRetentionPeriod (${this.deadLetterRetentionPeriod.toDays()} days) must be longer than `
        + `retentionPeriod (${this.retentionPeriod.toDays()} days): raise deadLetterRetentionPeriod (SQS allows up to 14 days).`);
    }

    const common = {
      fifo: props.fifo ? true : undefined,
      encryption: props.encryption ?? QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
    };
    // The source queue's name is known before it exists, so the DLQ's redrive allow policy can name
    // its ARN without a reference (queue → DLQ → queue would be a dependency cycle). It ends in the
    // stack instance's id, so a recreated stack never meets a retained queue of the same name.
    const queueName = `${Names.uniqueResourceName(this, { maxLength: 52, separator: '-' })}-${stackInstanceSuffix()}${props.fifo ? '.fifo' : ''}`;
    const queueArn = Stack.of(this).formatArn({ service: 'sqs', resource: queueName });
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      ...common,
      retentionPeriod: this.deadLetterRetentionPeriod,
      redriveAllowPolicy: { redrivePermission: RedrivePermission.BY_QUEUE, sourceQueues: [Queue.fromQueueArn(this, 'Source', queueArn)] },
    });
    const deadLetterQueue: DeadLetterQueue = { queue: this.deadLetterQueue, maxReceiveCount: this.redriveReceiveCount };
    this.queue = new Queue(this, 'Queue', {
      ...common,
      queueName,
      visibilityTimeout: visibility,
      retentionPeriod: this.retentionPeriod,
      deadLetterQueue,
    });
  }
}
