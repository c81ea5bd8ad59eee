/**
 * The capacity units a DynamoDB request costs, by the service's billing rules, read from the
 * request as sent (its JSON body, attribute values in wire form). DynamoDB Local cannot be asked:
 * it reports a `TransactWriteItems` as 4 write units per table whatever its items (one item or
 * twenty), where the service bills 2 per item per KB.
 *
 * - A write: a unit per KB of the item, rounded up per item; twice that in a transaction. DynamoDB
 *   bills the larger of the item before and after the write. A `Put` is sized from the item it
 *   writes; an `Update`, `Delete` or `ConditionCheck` names only a key, so its item is taken as
 *   under 1 KB (every item the credit workload writes is, before and after).
 * - A read: half a unit per item (up to 4 KB) read eventually consistent, one strongly consistent,
 *   two in a transaction; a key not found costs the same.
 */
export interface CapacityUnits {
  readonly read: number;
  readonly write: number;
}

type AttributeValue = Record<string, unknown>;
type Body = Record<string, unknown>;

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** An attribute value's size by DynamoDB's item-size rules (numbers: about one byte per two digits, plus one). */
function valueSize(value: AttributeValue): number {
  const [type, inner] = Object.entries(value)[0] ?? ['NULL', true];
  switch (type) {
    case 'S': return utf8(inner as string);
    case 'N': return Math.ceil((inner as string).replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
    case 'B': return typeof inner === 'string' ? Math.floor((inner.replace(/=+$/, '').length * 3) / 4) : (inner as Uint8Array).length;
    case 'SS': return (inner as string[]).reduce((sum, s) => sum + utf8(s), 0);
    case 'NS': return (inner as string[]).reduce((sum, n) => sum + valueSize({ N: n }), 0);
    case 'BS': return (inner as string[]).reduce((sum, b) => sum + valueSize({ B: b }), 0);
    case 'L': return 3 + (inner as AttributeValue[]).reduce((sum, element) => sum + 1 + valueSize(element), 0);
    case 'M': return 3 + itemSize(inner as Record<string, AttributeValue>) + Object.keys(inner as object).length;
    default: return 1; // BOOL, NULL
  }
}

/** An item's size: its attribute names and values. */
export function itemSize(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

/** Write units for one item: 1 per KB, rounded up; an item the request does not carry, 1. */
const writeUnits = (item: Record<string, AttributeValue> | undefined) => (item ? Math.max(1, Math.ceil(itemSize(item) / 1024)) : 1);

/** What the request costs if DynamoDB carries it out (or refuses it: a failed condition is billed too). */
export function capacityOf(command: string, body: Body): CapacityUnits {
  switch (command) {
    case 'PutItemCommand':
      return { read: 0, write: writeUnits(body.Item as Record<string, AttributeValue>) };
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return { read: 0, write: 1 };
    case 'BatchWriteItemCommand':
      return {
        read: 0,
        write: Object.values((body.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Record<string, AttributeValue> } }[]>)
          .flat().reduce((sum, request) => sum + writeUnits(request.PutRequest?.Item), 0),
      };
    case 'TransactWriteItemsCommand':
      return {
        read: 0,
        write: ((body.TransactItems ?? []) as { Put?: { Item: Record<string, AttributeValue> } }[]).reduce((sum, item) => sum + 2 * writeUnits(item.Put?.Item), 0),
      };
    case 'GetItemCommand':
      return { read: body.ConsistentRead ? 1 : 0.5, write: 0 };
    case 'BatchGetItemCommand':
      return {
        read: Object.values((body.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>)
          .reduce((sum, table) => sum + (table.Keys?.length ?? 0) * (table.ConsistentRead ? 1 : 0.5), 0),
        write: 0,
      };
    case 'TransactGetItemsCommand':
      return { read: 2 * ((body.TransactItems ?? []) as unknown[]).length, write: 0 };
    default:
      return { read: 0, write: 0 };
  }
}
