// Pure translations between DynamoDB Streams and Lambda's event source mapping, kept apart from
// the polling loop so they can be read (and unit-tested) without a stream. The record converter
// lives in shared/ (functions that read a stream themselves use it too); it is re-exported here.

export { DYNAMODB_EVENT_VERSION, toDynamoDbRecord, toLambdaAttributeValue, toLambdaItem } from '../../shared/streams/index.ts';

/** What the mapping makes of an invocation's result. */
export type BatchVerdict =
  | { readonly kind: 'success' }
  /** The handler reported failures; `firstFailedIndex` is the record with the lowest sequence number. */
  | { readonly kind: 'partial'; readonly firstFailedIndex: number }
  /** The handler threw, timed out, or sent an unusable failure report: the whole batch failed. */
  | { readonly kind: 'failed' };

/**
 * Reads `batchItemFailures` as Lambda does for streams, where `itemIdentifier` is a record's
 * SequenceNumber. Streams are processed in order, so only the lowest failed record matters: the
 * mapping checkpoints just before it and retries from there. An absent, null or empty list is a
 * success; an unusable report (not an object, not a list, an identifier that is missing, empty or
 * not in the batch) fails the whole batch, as on AWS.
 */
export function batchVerdict(response: unknown, sequenceNumbers: readonly string[], reportBatchItemFailures: boolean): BatchVerdict {
  if (!reportBatchItemFailures || response === null) return { kind: 'success' };
  if (typeof response !== 'object' || Array.isArray(response)) return { kind: 'failed' };
  const failures: unknown = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { kind: 'success' };
  if (!Array.isArray(failures)) return { kind: 'failed' };
  let firstFailedIndex = Infinity;
  for (const failure of failures) {
    const id: unknown = typeof failure === 'object' && failure !== null ? (failure as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    const index = typeof id === 'string' ? sequenceNumbers.indexOf(id) : -1;
    if (index < 0) return { kind: 'failed' };
    firstFailedIndex = Math.min(firstFailedIndex, index);
  }
  return firstFailedIndex === Infinity ? { kind: 'success' } : { kind: 'partial', firstFailedIndex };
}

/** Why a batch was skipped, as the invocation record's `requestContext.condition` names it. */
export type DiscardCondition = 'RetryAttemptsExhausted' | 'RecordAgeExceeded';

/** The JSON document Lambda sends to a stream mapping's on-failure destination. */
export interface StreamInvocationRecord {
  readonly requestContext: {
    readonly requestId: string;
    readonly functionArn: string;
    readonly condition: DiscardCondition;
    readonly approximateInvokeCount: number;
  };
  readonly responseContext: { readonly statusCode: number; readonly executedVersion: string; readonly functionError?: 'Unhandled' };
  readonly version: '1.0';
  readonly timestamp: string;
  readonly DDBStreamBatchInfo: {
    readonly shardId: string;
    readonly startSequenceNumber: string;
    readonly endSequenceNumber: string;
    readonly approximateArrivalOfFirstRecord: string;
    readonly approximateArrivalOfLastRecord: string;
    readonly batchSize: number;
    readonly streamArn: string;
  };
}

export interface StreamInvocationRecordInput {
  readonly condition: DiscardCondition;
  /** The last invocation that included the batch; absent when it expired before any invocation. */
  readonly lastInvocation?: { readonly requestId: string; readonly outcome: 'ok' | 'error' | 'timeout' };
  /** Used as requestId when the batch was never invoked. */
  readonly fallbackRequestId: string;
  readonly functionArn: string;
  readonly approximateInvokeCount: number;
  readonly timestampMs: number;
  readonly shardId: string;
  readonly streamArn: string;
  /** The batch's records in stream order: sequence number and approximate arrival. */
  readonly records: readonly { readonly sequenceNumber: string; readonly arrivalMs: number }[];
}

/**
 * Builds the invocation record for a skipped batch. Like AWS it describes the batch (shard, first and
 * last sequence number, arrival times) rather than carrying the data: a consumer re-reads the records
 * from the stream while they are retained. Arrival times are whole seconds, as AWS writes them for
 * DynamoDB. A handler that threw or timed out shows as `functionError: 'Unhandled'`; one that returned
 * (a partial failure report) has no functionError. A batch that expired before its first invocation
 * gets `statusCode: 0`, a local choice: AWS does not document that case.
 */
export function streamInvocationRecord(input: StreamInvocationRecordInput): StreamInvocationRecord {
  const [first, last] = [input.records[0], input.records.at(-1)];
  if (!first || !last) throw new Error('streamInvocationRecord: a skipped batch has at least one record.');
  const invoked = input.lastInvocation;
  return {
    requestContext: {
      requestId: invoked?.requestId ?? input.fallbackRequestId,
      functionArn: input.functionArn,
      condition: input.condition,
      approximateInvokeCount: input.approximateInvokeCount,
    },
    responseContext: {
      statusCode: invoked ? 200 : 0,
      executedVersion: '$LATEST',
      ...(invoked && invoked.outcome !== 'ok' ? { functionError: 'Unhandled' as const } : {}),
    },
    version: '1.0',
    timestamp: new Date(input.timestampMs).toISOString(),
    DDBStreamBatchInfo: {
      shardId: input.shardId,
      startSequenceNumber: first.sequenceNumber,
      endSequenceNumber: last.sequenceNumber,
      approximateArrivalOfFirstRecord: isoSeconds(first.arrivalMs),
      approximateArrivalOfLastRecord: isoSeconds(last.arrivalMs),
      batchSize: input.records.length,
      streamArn: input.streamArn,
    },
  };
}

/** `2019-11-14T00:13:19Z`: ISO 8601 without milliseconds. */
function isoSeconds(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}
