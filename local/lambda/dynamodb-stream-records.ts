import type { AttributeValue as SdkAttributeValue, _Record } from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord, StreamRecord } from 'aws-lambda';

// Pure translations between DynamoDB Streams and Lambda's event source mapping, kept apart from
// the polling loop so they can be read (and unit-tested) without a stream.

/** Lambda's event format version for DynamoDB Streams records. */
export const DYNAMODB_EVENT_VERSION = '1.1';

/**
 * One stream record as `GetRecords` returns it through the SDK, in the shape Lambda's event source
 * mapping delivers it. The SDK hands out `Date`s and `Uint8Array`s; Lambda's event is plain JSON,
 * so the creation time becomes epoch seconds and binary values base64, as on AWS.
 *
 * @example
 * import { toDynamoDbRecord } from '../local/lambda/dynamodb-stream-records.ts';
 * const event = { Records: Records.map((record) => toDynamoDbRecord(record, streamArn, 'us-east-1')) };
 */
export function toDynamoDbRecord(record: _Record, eventSourceARN: string, awsRegion: string): DynamoDBRecord {
  const stream = record.dynamodb;
  if (!record.eventID || !record.eventName || !stream?.SequenceNumber) {
    throw new Error(`GetRecords returned a record without eventID, eventName or SequenceNumber: ${JSON.stringify(record)}`);
  }
  const dynamodb: StreamRecord = {
    ...(stream.ApproximateCreationDateTime ? { ApproximateCreationDateTime: Math.floor(stream.ApproximateCreationDateTime.getTime() / 1_000) } : {}),
    ...(stream.Keys ? { Keys: toLambdaItem(stream.Keys) } : {}),
    ...(stream.NewImage ? { NewImage: toLambdaItem(stream.NewImage) } : {}),
    ...(stream.OldImage ? { OldImage: toLambdaItem(stream.OldImage) } : {}),
    SequenceNumber: stream.SequenceNumber,
    ...(stream.SizeBytes === undefined ? {} : { SizeBytes: stream.SizeBytes }),
    ...(stream.StreamViewType ? { StreamViewType: stream.StreamViewType } : {}),
  };
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: DYNAMODB_EVENT_VERSION,
    eventSource: 'aws:dynamodb',
    awsRegion,
    dynamodb,
    eventSourceARN,
    // Only TTL deletions carry an identity; Lambda spells its fields in camelCase.
    ...(record.userIdentity ? { userIdentity: { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId } } : {}),
  };
}

/** An item (or key) of SDK attribute values as Lambda's `{ "S": "..." }` JSON. */
export function toLambdaItem(item: Record<string, SdkAttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, toLambdaAttributeValue(value)]));
}

/** One SDK attribute value as Lambda's JSON form: binary as base64, maps and lists recursively. */
export function toLambdaAttributeValue(value: SdkAttributeValue): AttributeValue {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.SS !== undefined) return { SS: [...value.SS] };
  if (value.NS !== undefined) return { NS: [...value.NS] };
  if (value.BS !== undefined) return { BS: value.BS.map((bytes) => Buffer.from(bytes).toString('base64')) };
  if (value.M !== undefined) return { M: toLambdaItem(value.M) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaAttributeValue) };
  throw new Error(`Unsupported DynamoDB attribute value: ${JSON.stringify(value)}`);
}

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
