import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttribute, SQSRecord } from 'aws-lambda';

// Pure translations between SQS and Lambda's event source mapping, kept apart from the polling
// loop so they can be read (and unit-tested) without a queue.

/**
 * The ids of the records that stay on the queue after a successful invocation. As on AWS, an
 * unusable failure report (not an object, a non-array list, an entry whose itemIdentifier is
 * missing, empty or not in the batch) fails the whole batch; an absent or empty list fails none.
 */
export function failedRecordIds(response: unknown, records: readonly SQSRecord[], reportBatchItemFailures: boolean): Set<string> {
  const all = new Set(records.map((record) => record.messageId));
  if (!reportBatchItemFailures || response === null) return new Set();
  if (typeof response !== 'object' || Array.isArray(response)) return all;
  const failures: unknown = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return all;
  const failed = new Set<string>();
  for (const failure of failures) {
    const id: unknown = typeof failure === 'object' && failure !== null ? (failure as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    if (typeof id !== 'string' || !all.has(id)) return all;
    failed.add(id);
  }
  return failed;
}

/** One SQS message in the shape Lambda's event source mapping delivers it. */
export function toSqsRecord(message: Message, eventSourceARN: string, awsRegion: string): SQSRecord {
  const { MessageId, ReceiptHandle, Attributes = {} } = message;
  if (!MessageId || !ReceiptHandle) throw new Error(`ReceiveMessage returned a message without MessageId or ReceiptHandle: ${JSON.stringify(message)}`);
  const optional = (['AWSTraceHeader', 'SequenceNumber', 'MessageGroupId', 'MessageDeduplicationId', 'DeadLetterQueueSourceArn'] as const)
    .flatMap((name) => (Attributes[name] === undefined ? [] : [[name, Attributes[name]] as const]));
  return {
    messageId: MessageId,
    receiptHandle: ReceiptHandle,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: Attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: Attributes.SentTimestamp ?? '',
      SenderId: Attributes.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: Attributes.ApproximateFirstReceiveTimestamp ?? '',
      ...Object.fromEntries(optional),
    },
    messageAttributes: Object.fromEntries(Object.entries(message.MessageAttributes ?? {})
      .map(([name, value]) => [name, toLambdaMessageAttribute(value)])),
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN,
    awsRegion,
  };
}

/** SQS's `{ DataType, StringValue, BinaryValue: bytes }` as Lambda's camelCase, base64 shape. */
export function toLambdaMessageAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  return {
    ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
    ...(value.BinaryValue === undefined ? {} : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
    stringListValues: [],
    binaryListValues: [],
    dataType: value.DataType ?? 'String',
  };
}
