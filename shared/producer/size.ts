import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { MessageTooLargeError, type ProducerErrorOptions } from './errors.ts';

/**
 * 256 KiB: the message (and batch) size limit every SQS endpoint accepts. SQS itself now allows
 * up to 1 MiB per message on queues configured for it; raise `maxMessageBytes` only for those.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 262_144;

/** The size SQS counts for a message: body plus each attribute's name, data type and value. */
export function messageSizeBytes(body: string, attributes: Record<string, MessageAttributeValue> = {}): number {
  let size = Buffer.byteLength(body, 'utf8');
  for (const [name, value] of Object.entries(attributes)) {
    size += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value.DataType ?? '', 'utf8');
    if (value.StringValue !== undefined) size += Buffer.byteLength(value.StringValue, 'utf8');
    if (value.BinaryValue !== undefined) size += value.BinaryValue.byteLength;
  }
  return size;
}

/**
 * Refuses a message over `maxBytes` with an error that says by how much and what to do.
 * @throws MessageTooLargeError
 */
export function assertMessageSize(
  body: string, maxBytes: number, what: string, attributes: Record<string, MessageAttributeValue> = {}, errorOptions: ProducerErrorOptions = {},
): number {
  const size = messageSizeBytes(body, attributes);
  if (size > maxBytes) {
    throw new MessageTooLargeError(
      `${what} is ${size} bytes, over the ${maxBytes}-byte SQS message limit by ${size - maxBytes}: ` +
      'keep large data elsewhere (e.g. S3) and put its reference in the payload',
      size, maxBytes, errorOptions,
    );
  }
  return size;
}
