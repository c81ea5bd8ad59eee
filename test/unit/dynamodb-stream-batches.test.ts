import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import {
  CREATION_TIME_GRANULARITY_MS, estimateArrivalMs, ShardBatches, type BufferedRecord, type ShardBatchesSettings,
} from '../../local/lambda/dynamodb-stream-batches.ts';
import { batchVerdict, streamInvocationRecord, toDynamoDbRecord, toLambdaAttributeValue } from '../../local/lambda/dynamodb-stream-records.ts';

// The pure rules of the stream mapping: record shape, failure reports, and what a failure does to
// the batches after it. The integration test proves the same against DynamoDB Local.

/** Buffered records with sequence numbers 1..count, read and arrived at `atMs`. */
function records(count: number, atMs = 0): BufferedRecord[] {
  return Array.from({ length: count }, (_, index) => ({
    record: { eventName: 'INSERT', dynamodb: { SequenceNumber: String(index + 1) } },
    sequenceNumber: String(index + 1),
    readAtMs: atMs,
    arrivalMs: atMs,
    invokeCount: 0,
  }));
}

function shard(settings: Partial<ShardBatchesSettings>, buffered: BufferedRecord[]): ShardBatches {
  const batches = new ShardBatches({ batchSize: 10, bisectBatchOnFunctionError: false, maximumRetryAttempts: -1, maximumRecordAgeMs: -1, ...settings });
  batches.append(buffered);
  return batches;
}

const sequenceNumbersOf = (batch: { records: readonly BufferedRecord[] } | undefined) => batch?.records.map((entry) => entry.sequenceNumber);

describe('ShardBatches', () => {
  it('forms fresh batches of at most batchSize and checkpoints past a successful one', () => {
    // GIVEN five buffered records and a batch size of 3
    const batches = shard({ batchSize: 3 }, records(5));
    // WHEN the first batch succeeds
    const first = batches.next(0);
    assert.deepEqual(sequenceNumbersOf(first), ['1', '2', '3']);
    assert.equal(batches.settle(first!, { kind: 'success' }), 'checkpoint');
    // THEN the checkpoint moved past it and the rest form the next batch
    assert.equal(batches.checkpoint, '3');
    assert.deepEqual(sequenceNumbersOf(batches.next(0)), ['4', '5']);
  });

  it('retries a partial failure from the lowest failed record, with only the rest of the batch', () => {
    // GIVEN a batch of four whose third record failed
    const batches = shard({}, records(4));
    const batch = batches.next(0)!;
    // WHEN the partial failure is settled, THEN the first two are checkpointed and the retry starts at the third
    assert.equal(batches.settle(batch, { kind: 'partial', firstFailedIndex: 2 }), 'retry');
    assert.equal(batches.checkpoint, '2');
    assert.deepEqual(sequenceNumbersOf(batches.next(0)), ['3', '4']);
    // AND newly read records do not join the retried batch
    batches.append(records(6).slice(4));
    assert.deepEqual(sequenceNumbersOf(batches.next(0)), ['3', '4']);
  });

  it('bisects a failed batch without counting a retry, and discards the poison record once its retries are spent', () => {
    // GIVEN four records, bisection on, one retry allowed, and a poison record at position 3
    const batches = shard({ bisectBatchOnFunctionError: true, maximumRetryAttempts: 1 }, records(4));
    const steps: string[] = [];
    // WHEN each batch holding the poison record fails and the others succeed
    for (let step = 0; step < 10; step += 1) {
      const batch = batches.next(0);
      if (!batch) break;
      const label = sequenceNumbersOf(batch)?.join('') ?? '';
      if (batch.discard) {
        steps.push(`discard ${label}`);
        batches.skip(batch);
        continue;
      }
      steps.push(`${label} ${batches.settle(batch, label.includes('3') ? { kind: 'failed' } : { kind: 'success' })}`);
    }
    // THEN the halves narrowed it down, it was tried twice alone (1 + 1 retry), then skipped
    assert.deepEqual(steps, ['1234 bisect', '12 checkpoint', '34 bisect', '3 retry', '3 discard', 'discard 3', '4 checkpoint']);
    assert.equal(batches.buffered, 0);
    assert.equal(batches.checkpoint, '4');
  });

  it('retries a whole failure as the same batch until maximumRetryAttempts, then hands it out for discarding', () => {
    // GIVEN two records and two retries allowed
    const batches = shard({ maximumRetryAttempts: 2 }, records(2));
    // WHEN the batch fails three times
    const outcomes = [1, 2, 3].map(() => batches.settle(batches.next(0)!, { kind: 'failed' }));
    // THEN the third failure exhausts it, and the whole batch is to be discarded
    assert.deepEqual(outcomes, ['retry', 'retry', 'discard']);
    const discarded = batches.next(0);
    assert.equal(discarded?.discard, 'RetryAttemptsExhausted');
    assert.deepEqual(sequenceNumbersOf(discarded), ['1', '2']);
  });

  it('hands out the expired prefix of a batch for discarding and keeps the younger records', () => {
    // GIVEN two records that arrived at 0 and one at 5 000, with a 10 s age limit
    const buffered = [...records(2, 0), { ...records(3, 5_000)[2]! }];
    const batches = shard({ maximumRecordAgeMs: 10_000 }, buffered);
    // WHEN the batch is planned at 12 000
    const expired = batches.next(12_000);
    // THEN the two old records are to be discarded, and the young one still gets invoked
    assert.equal(expired?.discard, 'RecordAgeExceeded');
    assert.deepEqual(sequenceNumbersOf(expired), ['1', '2']);
    batches.skip(expired!);
    const rest = batches.next(12_000);
    assert.equal(rest?.discard, undefined);
    assert.deepEqual(sequenceNumbersOf(rest), ['3']);
  });
});

describe('estimateArrivalMs', () => {
  it('takes the latest time the truncated creation time allows, but not after the read', () => {
    assert.equal(estimateArrivalMs(60_000, 61_500), 61_500, 'read within the granularity: the read time');
    assert.equal(estimateArrivalMs(60_000, 500_000), 60_000 + CREATION_TIME_GRANULARITY_MS, 'read long after: the end of the granularity');
    assert.equal(estimateArrivalMs(60_000, 59_000), 60_000, 'never before the reported time');
    assert.equal(estimateArrivalMs(undefined, 7_000), 7_000, 'no creation time: the read time');
  });
});

describe('toDynamoDbRecord', () => {
  it('turns the SDK record into Lambda JSON: epoch seconds, base64 binary, nested maps and lists', () => {
    // GIVEN a record as the SDK returns it
    const sdkRecord: _Record = {
      eventID: 'e1', eventName: 'MODIFY', eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: 'ddblocal',
      dynamodb: {
        ApproximateCreationDateTime: new Date('2026-01-01T00:00:07.900Z'),
        Keys: { pk: { S: 'a' } },
        NewImage: { pk: { S: 'a' }, bytes: { B: Uint8Array.from([104, 105]) }, tags: { BS: [Uint8Array.from([1])] }, nested: { M: { list: { L: [{ N: '1' }, { NULL: true }] } } } },
        OldImage: { pk: { S: 'a' }, flag: { BOOL: false }, names: { SS: ['x'] }, sizes: { NS: ['2'] } },
        SequenceNumber: '000000000000000000042', SizeBytes: 30, StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      userIdentity: { Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' },
    };
    // WHEN it is translated
    const record = toDynamoDbRecord(sdkRecord, 'arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x', 'us-east-1');
    // THEN it has Lambda's shape
    assert.deepEqual(record, {
      eventID: 'e1', eventName: 'MODIFY', eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: 'us-east-1',
      dynamodb: {
        ApproximateCreationDateTime: Date.parse('2026-01-01T00:00:07Z') / 1_000,
        Keys: { pk: { S: 'a' } },
        NewImage: { pk: { S: 'a' }, bytes: { B: 'aGk=' }, tags: { BS: ['AQ=='] }, nested: { M: { list: { L: [{ N: '1' }, { NULL: true }] } } } },
        OldImage: { pk: { S: 'a' }, flag: { BOOL: false }, names: { SS: ['x'] }, sizes: { NS: ['2'] } },
        SequenceNumber: '000000000000000000042', SizeBytes: 30, StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x',
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
    });
  });

  it('rejects an attribute value of a type it does not know', () => {
    assert.throws(() => toLambdaAttributeValue({ $unknown: ['X', 1] }), /Unsupported DynamoDB attribute value/);
  });
});

describe('batchVerdict', () => {
  const sequenceNumbers = ['10', '20', '30'];
  it('reads batchItemFailures as AWS does for streams', () => {
    assert.deepEqual(batchVerdict(null, sequenceNumbers, true), { kind: 'success' });
    assert.deepEqual(batchVerdict({}, sequenceNumbers, true), { kind: 'success' });
    assert.deepEqual(batchVerdict({ batchItemFailures: [] }, sequenceNumbers, true), { kind: 'success' });
    assert.deepEqual(batchVerdict({ batchItemFailures: [{ itemIdentifier: '30' }, { itemIdentifier: '20' }] }, sequenceNumbers, true), { kind: 'partial', firstFailedIndex: 1 });
    assert.deepEqual(batchVerdict({ batchItemFailures: [{ itemIdentifier: '99' }] }, sequenceNumbers, true), { kind: 'failed' });
    assert.deepEqual(batchVerdict({ batchItemFailures: [{ itemIdentifier: '' }] }, sequenceNumbers, true), { kind: 'failed' });
    assert.deepEqual(batchVerdict({ batchItemFailures: 'all' }, sequenceNumbers, true), { kind: 'failed' });
    assert.deepEqual(batchVerdict('done', sequenceNumbers, true), { kind: 'failed' });
    assert.deepEqual(batchVerdict({ batchItemFailures: [{ itemIdentifier: '99' }] }, sequenceNumbers, false), { kind: 'success' }, 'ignored unless reported');
  });
});

describe('streamInvocationRecord', () => {
  it('describes a batch that expired before any invocation', () => {
    // GIVEN a batch of two records that was never invoked
    const record = streamInvocationRecord({
      condition: 'RecordAgeExceeded', fallbackRequestId: 'r-1', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:f',
      approximateInvokeCount: 0, timestampMs: Date.parse('2026-01-01T00:01:00.123Z'), shardId: 'shardId-1', streamArn: 'arn:s',
      records: [{ sequenceNumber: '1', arrivalMs: Date.parse('2026-01-01T00:00:01.500Z') }, { sequenceNumber: '2', arrivalMs: Date.parse('2026-01-01T00:00:02.000Z') }],
    });
    // THEN it has AWS's shape, with whole-second arrival times and no function error
    assert.deepEqual(record, {
      requestContext: { requestId: 'r-1', functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:f', condition: 'RecordAgeExceeded', approximateInvokeCount: 0 },
      responseContext: { statusCode: 0, executedVersion: '$LATEST' },
      version: '1.0',
      timestamp: '2026-01-01T00:01:00.123Z',
      DDBStreamBatchInfo: {
        shardId: 'shardId-1', startSequenceNumber: '1', endSequenceNumber: '2',
        approximateArrivalOfFirstRecord: '2026-01-01T00:00:01Z', approximateArrivalOfLastRecord: '2026-01-01T00:00:02Z',
        batchSize: 2, streamArn: 'arn:s',
      },
    });
  });
});
