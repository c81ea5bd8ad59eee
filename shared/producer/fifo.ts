import { createHash } from 'node:crypto';
import type { Envelope } from '../envelope/index.ts';

/** SQS's rule for group and deduplication ids: 1-128 printable ASCII characters. */
const SQS_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * FIFO message group: the resource id, so jobs of one account are delivered in order while
 * different accounts proceed in parallel. Ids SQS would refuse are hashed.
 */
export function messageGroupId(envelope: Envelope): string {
  return sqsSafeId(envelope.resourceId);
}

/**
 * FIFO deduplication id: the idempotency key, so SQS itself drops a producer's re-send of the same
 * intent within its 5-minute window (the worker's idempotency record covers the rest).
 */
export function messageDeduplicationId(envelope: Envelope): string {
  return sqsSafeId(envelope.idempotencyKey);
}

/** The value when SQS accepts it as an id, else its SHA-256 (64 hex characters). */
export function sqsSafeId(value: string): string {
  return SQS_ID.test(value) ? value : createHash('sha256').update(value).digest('hex');
}
