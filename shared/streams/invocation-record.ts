import * as z from 'zod/mini';
import { safeParse } from '../validation/index.ts';
import { InvalidInvocationRecordError } from './errors.ts';

/** A DynamoDB Streams sequence number: up to 40 decimal digits, compared as a BigInt. */
const DECIMAL = /^\d{1,40}$/;
const SEQUENCE_NUMBER = z.string().check(z.regex(DECIMAL, 'must be a decimal sequence number'));

/**
 * The part of Lambda's on-failure invocation record for a DynamoDB stream batch that locates the
 * batch: its shard and its first and last sequence number (the records themselves are not in it).
 */
export const STREAM_BATCH_INFO = z.object({
  shardId: z.string().check(z.minLength(1)),
  startSequenceNumber: SEQUENCE_NUMBER,
  endSequenceNumber: SEQUENCE_NUMBER,
  streamArn: z.string().check(z.regex(/^arn:[^:]+:dynamodb:[^:]*:[^:]*:table\/[^/]+\/stream\/.+$/, 'must be a DynamoDB stream ARN')),
  batchSize: z.int().check(z.positive()),
  // zod runs the refinement even when a field failed: compare only numbers that are numbers.
}).check(z.refine(({ startSequenceNumber: start, endSequenceNumber: end }) => !DECIMAL.test(start) || !DECIMAL.test(end) || BigInt(end) >= BigInt(start), {
  message: 'endSequenceNumber is below startSequenceNumber', path: ['endSequenceNumber'],
}));

export type StreamBatchInfo = z.infer<typeof STREAM_BATCH_INFO>;

/** Unknown fields (requestContext, responseContext, timestamp, ...) are accepted and ignored. */
const INVOCATION_RECORD = z.object({ DDBStreamBatchInfo: STREAM_BATCH_INFO });

/**
 * Reads the stream batch an on-failure invocation record describes (the body of a message Lambda
 * sent to a stream mapping's SQS on-failure destination).
 *
 * @throws InvalidInvocationRecordError when the body is not JSON or has no usable `DDBStreamBatchInfo`
 * @example
 * import { parseStreamBatchInfo } from '../../shared/streams/index.ts';
 * const { shardId, startSequenceNumber, endSequenceNumber } = parseStreamBatchInfo(record.body);
 */
export function parseStreamBatchInfo(body: string): StreamBatchInfo {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new InvalidInvocationRecordError(`invocation record is not JSON: ${(error as Error).message}`, { cause: error });
  }
  const parsed = safeParse(INVOCATION_RECORD, json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; ');
    throw new InvalidInvocationRecordError(`invocation record without a usable DDBStreamBatchInfo: ${issues}`);
  }
  return parsed.data.DDBStreamBatchInfo;
}
