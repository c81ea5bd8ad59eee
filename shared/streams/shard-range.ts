import {
  DynamoDBStreamsServiceException, ExpiredIteratorException, GetRecordsCommand, GetShardIteratorCommand, ResourceNotFoundException,
  TrimmedDataAccessException, type DynamoDBStreamsClient,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { withDefaults } from '../options/index.ts';
import type { StreamBatchInfo } from './invocation-record.ts';
import { toDynamoDbRecord } from './lambda-record.ts';

/** Why the records of a range cannot be read back (a `reason` metric dimension). */
export const RANGE_UNAVAILABLE = {
  /** TrimmedDataAccessException: older than the stream's retention (24 hours). */
  trimmed: 'records-trimmed',
  /** ExpiredIteratorException while paging: the range is treated as gone rather than re-read. */
  iteratorExpired: 'iterator-expired',
  /** ResourceNotFoundException: the stream (e.g. the table was re-created) or the shard no longer exists. */
  gone: 'stream-or-shard-gone',
  /** ValidationException: the stream refuses the sequence number for this shard. */
  invalid: 'range-invalid',
  /** The shard ended, or the page budget ran out, before the range's last record. */
  incomplete: 'range-incomplete',
} as const;
export type RangeUnavailableReason = (typeof RANGE_UNAVAILABLE)[keyof typeof RANGE_UNAVAILABLE];

/** What {@link readShardRange} found. */
export type ShardRange =
  /** Every record of the range, in stream order, in Lambda's event shape. */
  | { readonly kind: 'records'; readonly records: readonly DynamoDBRecord[] }
  | { readonly kind: 'unavailable'; readonly reason: RangeUnavailableReason; readonly detail: string };

export interface ReadShardRangeOptions {
  /**
   * GetRecords calls at most (each returns up to 1,000 records or 1 MB): bounds the loop when the
   * stream keeps answering without reaching the range's end.
   * @default 25
   */
  readonly maxPages?: number;
}

const defaults = { maxPages: 25 };

/**
 * Reads the records from `startSequenceNumber` through `endSequenceNumber` of one shard back from
 * the stream (GetShardIterator AT_SEQUENCE_NUMBER, then GetRecords pages until a record passes the
 * end, the shard ends or the page budget runs out), converted to Lambda's `DynamoDBRecord` shape.
 * The first record must be the range's start: a shard that resumes later has lost part of it.
 * Sequence numbers are compared as BigInt. A range the stream no longer has is answered as
 * `unavailable` with the reason; other failures (throttling, access denied, network) are thrown,
 * since a later attempt may succeed.
 *
 * @example
 * import { parseStreamBatchInfo, readShardRange } from '../../shared/streams/index.ts';
 * const range = await readShardRange(streams, parseStreamBatchInfo(message.body));
 * if (range.kind === 'records') await invalidate({ Records: [...range.records] });
 */
export async function readShardRange(
  streams: DynamoDBStreamsClient,
  batch: Pick<StreamBatchInfo, 'streamArn' | 'shardId' | 'startSequenceNumber' | 'endSequenceNumber'>,
  options: ReadShardRangeOptions = {},
): Promise<ShardRange> {
  const { maxPages } = withDefaults(defaults, options);
  if (!Number.isInteger(maxPages) || maxPages < 1) throw new RangeError(`readShardRange: maxPages must be an integer >= 1, got ${maxPages}`);
  const [start, end] = [BigInt(batch.startSequenceNumber), BigInt(batch.endSequenceNumber)];
  const region = batch.streamArn.split(':')[3] ?? '';
  const records: DynamoDBRecord[] = [];
  try {
    let { ShardIterator: iterator } = await streams.send(new GetShardIteratorCommand({
      StreamArn: batch.streamArn,
      ShardId: batch.shardId,
      ShardIteratorType: 'AT_SEQUENCE_NUMBER',
      SequenceNumber: batch.startSequenceNumber,
    }));
    for (let page = 0; page < maxPages; page += 1) {
      if (!iterator) return incomplete(batch, records, `shard ${batch.shardId} ended`);
      const result = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      for (const record of result.Records ?? []) {
        const lambdaRecord = toDynamoDbRecord(record, batch.streamArn, region); // refuses records without a SequenceNumber
        const sequenceNumber = BigInt(lambdaRecord.dynamodb?.SequenceNumber ?? '');
        if (records.length === 0 && sequenceNumber !== start) {
          return incomplete(batch, records, `the shard has no record ${batch.startSequenceNumber} (it resumes at ${sequenceNumber})`);
        }
        if (sequenceNumber > end) return { kind: 'records', records };
        records.push(lambdaRecord);
        if (sequenceNumber === end) return { kind: 'records', records };
      }
      iterator = result.NextShardIterator;
    }
    return incomplete(batch, records, `${maxPages} GetRecords pages`);
  } catch (error) {
    const reason = unavailableReason(error);
    if (!reason) throw error;
    return { kind: 'unavailable', reason, detail: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

function incomplete(batch: Pick<StreamBatchInfo, 'endSequenceNumber'>, records: readonly DynamoDBRecord[], after: string): ShardRange {
  return {
    kind: 'unavailable',
    reason: RANGE_UNAVAILABLE.incomplete,
    detail: `${after} after ${records.length} record(s), before reaching sequence number ${batch.endSequenceNumber}`,
  };
}

function unavailableReason(error: unknown): RangeUnavailableReason | undefined {
  if (error instanceof TrimmedDataAccessException) return RANGE_UNAVAILABLE.trimmed;
  if (error instanceof ExpiredIteratorException) return RANGE_UNAVAILABLE.iteratorExpired;
  if (error instanceof ResourceNotFoundException) return RANGE_UNAVAILABLE.gone;
  if (isValidationException(error)) return RANGE_UNAVAILABLE.invalid;
  return undefined;
}

/**
 * ValidationException is not modeled by the streams client (no class to match with `instanceof`):
 * it arrives as the service's base exception, recognizable only by its error code.
 */
function isValidationException(error: unknown): boolean {
  return error instanceof DynamoDBStreamsServiceException && error.name === 'ValidationException';
}
