import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { LOCAL_REGION } from '../engines/engine.ts';
import { MAX_FUNCTION_TIMEOUT_MS } from './context.ts';
import type { Settlement } from './dynamodb-stream-batches.ts';
import type { EventCountListener } from './event-counts.ts';
import { withDefaults } from '../../shared/options/index.ts';

/** One DynamoDB stream event source mapping: the stream, the function, and the mapping's settings from the template. */
export interface DynamoDbStreamEventSourceOptions {
  /** Client for the stream's endpoint (DynamoDB Local locally). */
  readonly streams: DynamoDBStreamsClient;
  /** The table's `LatestStreamArn`; becomes each record's `eventSourceARN`. */
  readonly streamArn: string;
  readonly handler: (event: DynamoDBStreamEvent, context: Context) => Promise<unknown>;
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
  /** Most records per invocation (1–10 000). @default 100 */
  readonly batchSize?: number;
  /** How long to keep gathering records once the first one was read (0–300 000). @default 0 - invoke with what one read returns */
  readonly maximumBatchingWindowMs?: number;
  /** Where to start in shards that exist when the mapping starts; shards found later are read from their start. @default 'LATEST' */
  readonly startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /** Whether a batch that failed as a whole is split in two and each half retried (splits count no retry). @default false */
  readonly bisectBatchOnFunctionError?: boolean;
  /** Retries of a failed batch before it is skipped (-1–10 000). @default -1 - retry until it succeeds or its records are too old */
  readonly maximumRetryAttempts?: number;
  /**
   * Age in seconds after which records are skipped instead of invoked: -1, or 60–604 800 as on AWS.
   * Counted from the record's arrival in the stream (see `estimateArrivalMs`).
   * @default -1 - no limit
   */
  readonly maximumRecordAgeSeconds?: number;
  /**
   * Tests only: accept a maximumRecordAgeSeconds from 1 to 59, below AWS's minimum of 60, so the age
   * limit can be proven in seconds. A template never sets it.
   * @default false
   */
  readonly allowShortRecordAge?: boolean;
  /** Where skipped batches are reported (`DestinationConfig.OnFailure`, an SQS queue). @default - skipped batches are dropped silently, as on AWS */
  readonly onFailure?: { readonly sqs: SQSClient; readonly queueUrl: string };
  /** Whether `batchItemFailures` (itemIdentifier = SequenceNumber) is honoured (`FunctionResponseTypes`). @default true */
  readonly reportBatchItemFailures?: boolean;
  /** Pause between reads of a shard that had nothing new, and before a retry. AWS polls 4 times a second. @default 250 */
  readonly pollIntervalMs?: number;
  /** Called after each invocation has been settled. @default - nothing is reported */
  readonly onInvocation?: (summary: StreamInvocationSummary) => void;
  /**
   * Called with the mapping's event counts as they happen (Lambda's `MetricsConfig` EventCount
   * metrics): events polled, invoked, failed, dropped and delivered to the on-failure destination.
   * @default - nothing is reported
   */
  readonly onEventCount?: EventCountListener;
  /** Called when a DescribeStream, read or on-failure report fails; polling goes on. @default - one line on stderr */
  readonly onError?: (error: unknown) => void;
  /** Clock for durations, batching windows, record ages and the handler's countdown. @default Date.now */
  readonly nowMs?: () => number;
}

/** What one invocation did, for progress reports and tests. */
export interface StreamInvocationSummary {
  readonly awsRequestId: string;
  readonly shardId: string;
  /** The batch's SequenceNumbers, in stream order. */
  readonly sequenceNumbers: readonly string[];
  /** `abandoned`: still running when stop()'s grace period ended; nothing was checkpointed. */
  readonly outcome: 'ok' | 'error' | 'timeout' | 'abandoned';
  /** What the mapping does next with the batch; `none` for an abandoned invocation. */
  readonly next: Settlement | 'none';
  readonly durationMs: number;
  /** Lambda's `IteratorAge`: how old the batch's last record was when the invocation started. */
  readonly iteratorAgeMs: number;
  /** What the handler threw, for outcome `error`. */
  readonly error?: unknown;
}

const defaults = {
  batchSize: 100,
  maximumBatchingWindowMs: 0,
  startingPosition: 'LATEST',
  bisectBatchOnFunctionError: false,
  maximumRetryAttempts: -1,
  maximumRecordAgeSeconds: -1,
  allowShortRecordAge: false,
  reportBatchItemFailures: true,
  pollIntervalMs: 250,
  initPhaseLimitMs: 0,
} as const;

export type ResolvedStreamOptions = DynamoDbStreamEventSourceOptions
  & Required<Pick<DynamoDbStreamEventSourceOptions, keyof typeof defaults>>;

/** The options merged with their defaults, rejected with a message naming the field, the value and the fix when AWS would reject them. */
export function resolveStreamOptions(options: DynamoDbStreamEventSourceOptions): ResolvedStreamOptions {
  const config: ResolvedStreamOptions = withDefaults(defaults, options);
  const ranges = [
    ['functionTimeoutMs', config.functionTimeoutMs, 1, MAX_FUNCTION_TIMEOUT_MS, 'pass the function timeout in milliseconds'],
    ['batchSize', config.batchSize, 1, 10_000, 'use 1 to 10000'],
    ['maximumBatchingWindowMs', config.maximumBatchingWindowMs, 0, 300_000, 'use 0 to 300000'],
    ['maximumRetryAttempts', config.maximumRetryAttempts, -1, 10_000, 'use -1 (until the record expires) or 0 to 10000'],
    ['maximumRecordAgeSeconds', config.maximumRecordAgeSeconds, -1, 604_800, 'use -1 (no limit) or 60 to 604800'],
    ['pollIntervalMs', config.pollIntervalMs, 1, 60_000, 'use 1 to 60000; AWS polls every 250 ms'],
    ['initPhaseLimitMs', config.initPhaseLimitMs, 0, MAX_FUNCTION_TIMEOUT_MS, 'use 0 for in-process handlers or the runtime\'s INIT_PHASE_LIMIT_MS'],
  ] as const;
  for (const [field, value, min, max, fix] of ranges) {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`startDynamoDbStreamEventSource: ${field} must be an integer from ${min} to ${max}; got ${value}: ${fix}.`);
    }
  }
  const age = config.maximumRecordAgeSeconds;
  const shortestAge = config.allowShortRecordAge ? 1 : 60;
  if (age !== -1 && age < shortestAge) {
    throw new RangeError(`startDynamoDbStreamEventSource: maximumRecordAgeSeconds must be -1 or at least ${shortestAge}; got ${age}: use 60 or more (tests may set allowShortRecordAge).`);
  }
  if (config.startingPosition !== 'TRIM_HORIZON' && config.startingPosition !== 'LATEST') {
    throw new TypeError(`startDynamoDbStreamEventSource: startingPosition must be TRIM_HORIZON or LATEST; got ${String(config.startingPosition)}.`);
  }
  if (!config.functionName) throw new TypeError('startDynamoDbStreamEventSource: functionName must be a non-empty string; take it from the template.');
  if (!/^arn:aws[\w-]*:dynamodb:[\w-]+:\d{12}:table\/[\w.-]+\/stream\/.+$/.test(config.streamArn)) {
    throw new TypeError(`startDynamoDbStreamEventSource: streamArn must look like arn:aws:dynamodb:<region>:<account>:table/<table>/stream/<label>; got ${config.streamArn}: read the table's LatestStreamArn.`);
  }
  if (config.onFailure && !config.onFailure.queueUrl) {
    throw new TypeError('startDynamoDbStreamEventSource: onFailure.queueUrl must be a non-empty string: pass the destination queue\'s URL.');
  }
  return config;
}

/**
 * The region records carry as `awsRegion`: the stream ARN's, except that DynamoDB Local names every
 * region `ddblocal` (with -sharedDb), where the local cloud's region is what handlers expect.
 */
export function regionOfStream(streamArn: string): string {
  const region = streamArn.split(':')[3] ?? LOCAL_REGION;
  return region === 'ddblocal' ? LOCAL_REGION : region;
}
