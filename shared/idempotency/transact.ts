import { TransactionCanceledException, TransactWriteItemsCommand, type CancellationReason, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { convertToAttr, marshall, type marshallOptions } from '@aws-sdk/util-dynamodb';
import type { TransactItem } from '../lock/index.ts';

/** DynamoDB's limit on the items of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/**
 * Sends one `TransactWriteItems` built from document-form items; resolves undefined when it
 * committed, or with the cancellation reasons (their `Item` still in attribute-value form).
 *
 * The items are marshalled here, field by field, and sent as the low-level command through the
 * document client (which shares its client's middleware stack and config). A document command
 * would marshal the same fields but first add two middlewares to a copy of the stack and sort it,
 * on every send: on the worker's hot path that bookkeeping cost more CPU than the marshalling.
 * The document client's own `marshallOptions` are honoured.
 */
export function transactWrite(documents: DynamoDBDocumentClient, items: readonly TransactItem[]): Promise<CancellationReason[] | undefined> {
  return sendTransaction(documents, marshallItems(documents, items));
}

/** Items in the attribute-value form `TransactWriteItems` takes; throws what `marshall` would throw. */
export function marshallItems(documents: DynamoDBDocumentClient, items: readonly TransactItem[]): TransactWriteItem[] {
  // lib-dynamodb sets convertTopLevelContainer on this very object the first time a document
  // command runs; here the top level is always a map of attributes, never wrapped in { M }.
  const configured = (documents.config as { translateConfig?: { marshallOptions?: marshallOptions } }).translateConfig?.marshallOptions;
  const options: marshallOptions = { ...configured, convertTopLevelContainer: false };
  return items.map((item) => marshallItem(item, options));
}

/** Sends marshalled items as one transaction: undefined when it committed, else the cancellation reasons. */
export async function sendTransaction(documents: DynamoDBDocumentClient, items: TransactWriteItem[]): Promise<CancellationReason[] | undefined> {
  try {
    await documents.send(new TransactWriteItemsCommand({ TransactItems: items }));
    return undefined;
  } catch (error) {
    if (error instanceof TransactionCanceledException && error.CancellationReasons) return error.CancellationReasons;
    throw error;
  }
}

/** The document-valued fields of a transaction item (`Item`, `Key`, `ExpressionAttributeValues`), marshalled. */
function marshallItem(item: TransactItem, options: marshallOptions): TransactWriteItem {
  const out: Record<string, unknown> = {};
  for (const [kind, body] of Object.entries(item) as [string, Record<string, unknown> | undefined][]) {
    if (!body) continue;
    const fields: Record<string, unknown> = { ...body };
    for (const field of ['Item', 'Key', 'ExpressionAttributeValues'] as const) {
      if (body[field] !== undefined) fields[field] = marshallMap(body[field] as Record<string, unknown>, options);
    }
    out[kind] = fields;
  }
  return out as TransactWriteItem;
}

/**
 * A map of attributes (the top level of an `Item`, a `Key` or `ExpressionAttributeValues`) in
 * attribute-value form, as util-dynamodb's `marshall` makes it with `convertTopLevelContainer` off.
 * Non-empty strings and safe numbers (nearly every attribute an idempotency record, a lock or a
 * business write carries) are written here: `marshall` runs a chain of type checks for every
 * value, which on the hot path was a measurable share of a record's CPU. Every other value goes
 * through `convertToAttr` with the same options, and anything but a plain object through
 * `marshall` itself, so results and errors are the same (test/unit/marshall-map.test.ts).
 */
export function marshallMap(map: Record<string, unknown>, options: marshallOptions): Record<string, unknown> {
  if (map.constructor !== Object && map.constructor !== undefined) return marshall(map, options) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key in map) {
    const value = map[key];
    if (typeof value === 'string' && (value !== '' || !options.convertEmptyValues)) out[key] = { S: value };
    else if (typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) out[key] = { N: String(value) };
    else if (typeof value === 'function' || (value === undefined && options.removeUndefinedValues)) continue;
    else out[key] = convertToAttr(value, options);
  }
  return out;
}
