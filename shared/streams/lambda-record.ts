import type { AttributeValue as SdkAttributeValue, _Record } from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord, StreamRecord } from 'aws-lambda';

// Pure translations from DynamoDB Streams (as the SDK returns them) to the records Lambda's event
// source mapping delivers: used by the local cloud's stream mapping and by every function that
// reads a stream itself (the invalidation repair), so both see exactly what Lambda would deliver.

/** Lambda's event format version for DynamoDB Streams records. */
export const DYNAMODB_EVENT_VERSION = '1.1';

/**
 * One stream record as `GetRecords` returns it through the SDK, in the shape Lambda's event source
 * mapping delivers it. The SDK hands out `Date`s and `Uint8Array`s; Lambda's event is plain JSON,
 * so the creation time becomes epoch seconds and binary values base64, as on AWS.
 *
 * @example
 * import { toDynamoDbRecord } from '../shared/streams/index.ts';
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
