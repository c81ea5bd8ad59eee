/**
 * DynamoDB Streams as Lambda sees them: the SDK-to-Lambda record converter, the on-failure
 * invocation record of a stream mapping, and reading a failed batch's records back from its shard.
 */
export { InvalidInvocationRecordError } from './errors.ts';
export { parseStreamBatchInfo, STREAM_BATCH_INFO, type StreamBatchInfo } from './invocation-record.ts';
export { DYNAMODB_EVENT_VERSION, toDynamoDbRecord, toLambdaAttributeValue, toLambdaItem } from './lambda-record.ts';
export { RANGE_UNAVAILABLE, readShardRange, type RangeUnavailableReason, type ReadShardRangeOptions, type ShardRange } from './shard-range.ts';
