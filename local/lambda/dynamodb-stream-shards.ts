import {
  DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient, type Shard as ListedShard,
} from '@aws-sdk/client-dynamodb-streams';
import { estimateArrivalMs, ShardBatches, type ShardBatchesSettings } from './dynamodb-stream-batches.ts';
import { toDynamoDbRecord } from './dynamodb-stream-records.ts';

// The stream side of the mapping: listing shards and reading them. The poller decides when.

/** GetRecords returns at most 1 000 records per call. */
const GET_RECORDS_MAX_LIMIT = 1_000;

/** Where a shard is read from, and how far. */
export interface StreamShard {
  readonly shardId: string;
  readonly parentShardId: string | undefined;
  /** Where reading starts before the first record was read. */
  startingPosition: 'TRIM_HORIZON' | 'LATEST';
  readonly batches: ShardBatches;
  /** `waiting`: for its parent to finish; `finished`: closed and processed to the end, or skipped at LATEST. */
  state: 'waiting' | 'polling' | 'finished';
  iterator: string | undefined;
  /** GetRecords returned no NextShardIterator: the shard is closed and was read to its end. */
  ended: boolean;
  lastReadSequenceNumber: string | undefined;
  /** Number of the last GetRecords that found nothing while nothing was buffered: the shard had caught up. */
  caughtUpAtRead: number;
}

/** What reading needs, shared by every shard of one mapping. */
export interface ShardReader {
  readonly streams: DynamoDBStreamsClient;
  readonly streamArn: string;
  /** Becomes each record's `awsRegion`. */
  readonly awsRegion: string;
  readonly nowMs: () => number;
  /** Aborts calls in flight when the mapping stops, so stop() never waits on the network. */
  readonly abortSignal: AbortSignal;
}

/** Every shard of the stream, following DescribeStream's pages. */
export async function listShards({ streams, streamArn, abortSignal }: ShardReader): Promise<ListedShard[]> {
  const listed: ListedShard[] = [];
  let exclusiveStartShardId: string | undefined;
  do {
    const { StreamDescription } = await streams.send(
      new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: exclusiveStartShardId }), { abortSignal },
    );
    listed.push(...(StreamDescription?.Shards ?? []));
    exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
  } while (exclusiveStartShardId && !abortSignal.aborted);
  return listed;
}

/**
 * A shard found by DescribeStream. The starting position applies to the shards listed when the
 * mapping starts; at LATEST, those already closed hold nothing new and are finished at once. Shards
 * found later were created since, and are read from their start.
 */
export function newShard(
  listed: ListedShard & { readonly ShardId: string },
  atStart: { readonly startingPosition: 'TRIM_HORIZON' | 'LATEST' } | undefined,
  settings: ShardBatchesSettings,
): StreamShard {
  const closed = listed.SequenceNumberRange?.EndingSequenceNumber !== undefined;
  const skip = atStart?.startingPosition === 'LATEST' && closed;
  return {
    shardId: listed.ShardId,
    parentShardId: listed.ParentShardId,
    startingPosition: atStart?.startingPosition ?? 'TRIM_HORIZON',
    batches: new ShardBatches(settings),
    state: skip ? 'finished' : 'waiting',
    iterator: undefined,
    ended: skip,
    lastReadSequenceNumber: undefined,
    caughtUpAtRead: 0,
  };
}

/**
 * One GetRecords call with room for a fresh batch, after GetShardIterator when the shard has no
 * iterator yet (or lost it): at the starting position before anything was read, then
 * AFTER_SEQUENCE_NUMBER of the last record read, so a new iterator resumes where reading stopped.
 * Records are appended to the shard's batches in Lambda's shape.
 */
export async function readShard(reader: ShardReader, shard: StreamShard, readNumber: number): Promise<void> {
  const { streams, streamArn, awsRegion, nowMs, abortSignal } = reader;
  shard.iterator ??= (await streams.send(new GetShardIteratorCommand({
    StreamArn: streamArn,
    ShardId: shard.shardId,
    ...(shard.lastReadSequenceNumber === undefined
      ? { ShardIteratorType: shard.startingPosition }
      : { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: shard.lastReadSequenceNumber }),
  }), { abortSignal })).ShardIterator;
  if (shard.iterator === undefined) {
    shard.ended = true; // no iterator: the shard is closed and nothing is left after the position
    return;
  }
  const { Records = [], NextShardIterator } = await streams.send(
    new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: Math.min(GET_RECORDS_MAX_LIMIT, shard.batches.room) }), { abortSignal },
  );
  shard.iterator = NextShardIterator;
  shard.ended = NextShardIterator === undefined;
  const readAtMs = nowMs();
  shard.batches.append(Records.map((record) => {
    const lambdaRecord = toDynamoDbRecord(record, streamArn, awsRegion);
    return {
      record: lambdaRecord,
      sequenceNumber: lambdaRecord.dynamodb?.SequenceNumber as string, // toDynamoDbRecord rejects records without one
      readAtMs,
      arrivalMs: estimateArrivalMs(record.dynamodb?.ApproximateCreationDateTime?.getTime(), readAtMs),
      invokeCount: 0,
    };
  }));
  shard.lastReadSequenceNumber = Records.at(-1)?.dynamodb?.SequenceNumber ?? shard.lastReadSequenceNumber;
  if (Records.length === 0 && shard.batches.buffered === 0) shard.caughtUpAtRead = readNumber;
}
