import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type AttributeValue as StreamAttributeValue,
  type DynamoDBStreamsClient, type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

/** Reads a table's stream, handing out each record once, in Lambda's event shape. */
export interface StreamEventReader {
  /**
   * The records written since the last call (across all shards), as one `DynamoDBStreamEvent`.
   * Polls until at least `minRecords` arrived or `timeoutMs` passed (then throws).
   */
  next(options?: { minRecords?: number; timeoutMs?: number }): Promise<DynamoDBStreamEvent>;
}

/** The table's latest stream ARN (the table must have a stream). */
export async function latestStreamArn(dynamodb: DynamoDBClient, tableName: string): Promise<string> {
  const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
  if (!Table?.LatestStreamArn) throw new Error(`table ${tableName} has no stream`);
  return Table.LatestStreamArn;
}

/**
 * A reader over the real stream (DescribeStream, GetShardIterator, GetRecords on DynamoDB Local)
 * that converts records to what a Lambda event source mapping delivers: `eventSourceARN` set,
 * `ApproximateCreationDateTime` in epoch seconds, images in AttributeValue JSON (binary as base64).
 * By default it starts after the records already in the stream (`from: 'now'`), so each test sees
 * only its own changes; `from: 'trim-horizon'` starts at the oldest record.
 *
 * @example
 * const reader = await streamEventReader(dynamodb, streams, tables.state);
 * await documents.send(new PutCommand(...));
 * const event = await reader.next({ minRecords: 1 });
 */
export async function streamEventReader(
  dynamodb: DynamoDBClient,
  streams: DynamoDBStreamsClient,
  tableName: string,
  options: { from?: 'now' | 'trim-horizon' } = {},
): Promise<StreamEventReader> {
  const streamArn = await latestStreamArn(dynamodb, tableName);
  const lastSequenceNumber = new Map<string, string>();

  async function readOnce(): Promise<DynamoDBRecord[]> {
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const records: DynamoDBRecord[] = [];
    for (const shard of StreamDescription?.Shards ?? []) {
      const shardId = shard.ShardId ?? '';
      const after = lastSequenceNumber.get(shardId);
      let { ShardIterator: iterator } = await streams.send(new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }),
      }));
      for (let page = 0; iterator && page < 20; page += 1) {
        const result = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
        const fetched = result.Records ?? [];
        if (fetched.length === 0) break;
        for (const record of fetched) records.push(toLambdaRecord(record, streamArn));
        lastSequenceNumber.set(shardId, fetched.at(-1)?.dynamodb?.SequenceNumber ?? after ?? '');
        iterator = result.NextShardIterator;
      }
    }
    return records;
  }

  if ((options.from ?? 'now') === 'now') await readOnce();
  return {
    async next({ minRecords = 1, timeoutMs = 10_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      const records: DynamoDBRecord[] = [];
      for (;;) {
        records.push(...(await readOnce()));
        if (records.length >= minRecords) return { Records: records };
        if (Date.now() > deadline) throw new Error(`stream of ${tableName}: ${records.length} of ${minRecords} records after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

function toLambdaRecord(record: StreamRecord, streamArn: string): DynamoDBRecord {
  const data = record.dynamodb ?? {};
  const created = data.ApproximateCreationDateTime;
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: record.eventSource ?? 'aws:dynamodb',
    awsRegion: record.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(created ? { ApproximateCreationDateTime: Math.floor(new Date(created).getTime() / 1000) } : {}),
      Keys: toLambdaImage(data.Keys),
      ...(data.NewImage ? { NewImage: toLambdaImage(data.NewImage) } : {}),
      ...(data.OldImage ? { OldImage: toLambdaImage(data.OldImage) } : {}),
      SequenceNumber: data.SequenceNumber,
      SizeBytes: data.SizeBytes,
      StreamViewType: data.StreamViewType,
    },
  };
}

function toLambdaImage(image: Record<string, StreamAttributeValue> | undefined): Record<string, AttributeValue> | undefined {
  return image ? Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaAttribute(value)])) : undefined;
}

/** SDK attribute (binary as Uint8Array) to Lambda's JSON form (binary as base64). */
function toLambdaAttribute(value: StreamAttributeValue): AttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((item) => Buffer.from(item).toString('base64')) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) ?? {} };
  if (value.L !== undefined) return { L: value.L.map(toLambdaAttribute) };
  const [[type, inner] = ['NULL', true]] = Object.entries(value).filter(([key, v]) => key !== '$unknown' && v !== undefined);
  return { [type]: inner } as AttributeValue;
}
