import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  DynamoDBStreamsClient, DynamoDBStreamsServiceException, ExpiredIteratorException, LimitExceededException, ResourceNotFoundException,
  TrimmedDataAccessException, type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { streamInvocationRecord } from '../../local/lambda/dynamodb-stream-records.ts';
import { InvalidInvocationRecordError, parseStreamBatchInfo, RANGE_UNAVAILABLE, readShardRange } from '../../shared/streams/index.ts';

const STREAM_ARN = 'arn:aws:dynamodb:eu-west-1:123456789012:table/state/stream/2026-01-01T00:00:00.000';

/**
 * A streams client that never leaves the process: every command is answered by `respond` (its
 * name and input), so paging and error classification can be checked without a stream.
 */
function scriptedStreams(respond: (command: string, input: Record<string, unknown>) => object) {
  const calls: string[] = [];
  const client = new DynamoDBStreamsClient({ region: 'eu-west-1', credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' } });
  client.middlewareStack.add((_next, context) => async (args) => {
    calls.push(context.commandName ?? '');
    return { output: { $metadata: {}, ...respond(context.commandName ?? '', args.input as Record<string, unknown>) }, response: {} };
  }, { step: 'initialize', name: 'scriptedStreams' });
  return { client, calls };
}

const record = (sequenceNumber: string): _Record => ({
  eventID: `e-${sequenceNumber}`, eventName: 'MODIFY', dynamodb: { SequenceNumber: sequenceNumber, Keys: { pk: { S: 'account#a' } } },
});

/** Pages of GetRecords, served in order; the last page closes the shard unless `open`. */
function pagedShard(pages: readonly (readonly string[])[], { open = false } = {}) {
  return scriptedStreams((command, input) => {
    if (command === 'GetShardIteratorCommand') return { ShardIterator: 'page-0' };
    const page = Number(String(input.ShardIterator).slice('page-'.length));
    const last = page >= pages.length - 1;
    return { Records: (pages[page] ?? []).map(record), ...(last && !open ? {} : { NextShardIterator: `page-${page + 1}` }) };
  });
}

const range = (start: string, end: string) => ({ streamArn: STREAM_ARN, shardId: 'shardId-1', startSequenceNumber: start, endSequenceNumber: end });

describe('readShardRange', () => {
  it('pages from the start through the end, comparing sequence numbers as numbers, and stops at the end', async () => {
    // GIVEN a shard whose records straddle the range, with an empty page in between ('99' > '101' as strings)
    const { client, calls } = pagedShard([['99'], [], ['100', '101', '102'], ['103']], { open: true });
    // WHEN
    const result = await readShardRange(client, range('99', '101'));
    // THEN
    assert.equal(result.kind, 'records');
    assert.deepEqual(result.kind === 'records' && result.records.map((r) => r.dynamodb?.SequenceNumber), ['99', '100', '101']);
    assert.deepEqual(result.kind === 'records' && result.records.map((r) => [r.eventSourceARN, r.awsRegion]), Array(3).fill([STREAM_ARN, 'eu-west-1']));
    assert.deepEqual(calls, ['GetShardIteratorCommand', 'GetRecordsCommand', 'GetRecordsCommand', 'GetRecordsCommand'], 'the fourth page is never read');
  });

  it('answers range-incomplete when the shard ends, or the page budget runs out, before the end', async () => {
    const ended = await readShardRange(pagedShard([['10'], ['11']]).client, range('10', '20'));
    assert.deepEqual(ended.kind === 'unavailable' && ended.reason, RANGE_UNAVAILABLE.incomplete);
    assert.match(ended.kind === 'unavailable' ? ended.detail : '', /shard shardId-1 ended after 2 record\(s\), before reaching sequence number 20/);

    const { client, calls } = pagedShard([['10']], { open: true });
    const stalled = await readShardRange(client, range('10', '20'), { maxPages: 4 });
    assert.deepEqual(stalled.kind === 'unavailable' && stalled.reason, RANGE_UNAVAILABLE.incomplete);
    assert.equal(calls.filter((call) => call === 'GetRecordsCommand').length, 4, 'bounded by maxPages');
  });

  it('answers range-incomplete when the shard resumes after the range\'s first record', async () => {
    const result = await readShardRange(pagedShard([['12', '13']]).client, range('10', '13'));
    assert.deepEqual(result.kind === 'unavailable' && [result.reason, result.detail],
      [RANGE_UNAVAILABLE.incomplete, 'the shard has no record 10 (it resumes at 12) after 0 record(s), before reaching sequence number 13']);
  });

  it('classifies the errors that mean "no longer in the stream" and throws every other one', async () => {
    const failing = (error: Error, on: string) => scriptedStreams((command) => {
      if (command === on) throw error;
      return command === 'GetShardIteratorCommand' ? { ShardIterator: 'page-0' } : { Records: [], NextShardIterator: 'page-0' };
    }).client;
    const meta = { $metadata: {} };
    const cases = [
      [new TrimmedDataAccessException({ message: 'trimmed', ...meta }), 'GetShardIteratorCommand', RANGE_UNAVAILABLE.trimmed],
      [new ExpiredIteratorException({ message: 'expired', ...meta }), 'GetRecordsCommand', RANGE_UNAVAILABLE.iteratorExpired],
      [new ResourceNotFoundException({ message: 'Shard does not exist', ...meta }), 'GetShardIteratorCommand', RANGE_UNAVAILABLE.gone],
      [new DynamoDBStreamsServiceException({ name: 'ValidationException', $fault: 'client', message: 'Invalid SequenceNumber for the shard', ...meta }),
        'GetShardIteratorCommand', RANGE_UNAVAILABLE.invalid],
    ] as const;
    for (const [error, on, reason] of cases) {
      const result = await readShardRange(failing(error, on), range('1', '2'));
      assert.deepEqual(result, { kind: 'unavailable', reason, detail: `${error.name}: ${error.message}` }, error.name);
    }
    // A throttled or refused read may succeed later: it is the caller's failure, not a gone range.
    const throttled = new LimitExceededException({ message: 'slow down', ...meta });
    await assert.rejects(readShardRange(failing(throttled, 'GetRecordsCommand'), range('1', '2')), (error) => error === throttled);
  });

  it('refuses a page budget below 1', async () => {
    await assert.rejects(readShardRange(pagedShard([]).client, range('1', '2'), { maxPages: 0 }), /maxPages must be an integer >= 1, got 0/);
  });
});

describe('parseStreamBatchInfo', () => {
  const invocation = streamInvocationRecord({
    condition: 'RecordAgeExceeded', fallbackRequestId: 'r-1', functionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:cache-invalidator',
    approximateInvokeCount: 0, timestampMs: 0, shardId: 'shardId-1', streamArn: STREAM_ARN,
    records: [{ sequenceNumber: '99', arrivalMs: 0 }, { sequenceNumber: '100', arrivalMs: 0 }],
  });

  it('reads the batch of the invocation record Lambda sends to an on-failure destination', () => {
    assert.deepEqual(parseStreamBatchInfo(JSON.stringify(invocation)), {
      shardId: 'shardId-1', startSequenceNumber: '99', endSequenceNumber: '100', streamArn: STREAM_ARN, batchSize: 2,
    });
  });

  it('refuses what is not one, naming the problem', () => {
    const info = invocation.DDBStreamBatchInfo;
    const cases: [string, RegExp][] = [
      ['not json', /invocation record is not JSON/],
      ['{}', /DDBStreamBatchInfo: /],
      [JSON.stringify({ DDBStreamBatchInfo: { ...info, startSequenceNumber: '9e9' } }), /DDBStreamBatchInfo\.startSequenceNumber: must be a decimal sequence number/],
      [JSON.stringify({ DDBStreamBatchInfo: { ...info, streamArn: 'arn:aws:sqs:eu-west-1:1:q' } }), /streamArn: must be a DynamoDB stream ARN/],
      [JSON.stringify({ DDBStreamBatchInfo: { ...info, startSequenceNumber: '101' } }), /endSequenceNumber: endSequenceNumber is below startSequenceNumber/],
    ];
    for (const [body, message] of cases) {
      assert.throws(() => parseStreamBatchInfo(body), (error) => error instanceof InvalidInvocationRecordError && message.test(error.message), body);
    }
  });
});
