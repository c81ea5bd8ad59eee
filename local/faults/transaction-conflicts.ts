/**
 * DynamoDB's item-level transaction conflicts, which DynamoDB Local does not reproduce.
 *
 * The service cancels a `TransactWriteItems` one of whose items is part of another
 * `TransactWriteItems` still in progress (`TransactionCanceledException`, reason
 * `TransactionConflict` on that item), and refuses a `PutItem`, `UpdateItem` or `DeleteItem` on such
 * an item (`TransactionConflictException`); neither is retried by the SDK. DynamoDB Local instead
 * runs overlapping transactions one after the other and both succeed, so code that sends two
 * transactions on one item at once looks fine locally and conflicts on AWS. The fault proxy keeps
 * this registry of the items of the transactions it has forwarded and not yet seen answered.
 */

/** The operations that meet an item of a transaction in progress. */
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const TRANSACT_KINDS = ['Put', 'Update', 'Delete', 'ConditionCheck'] as const;

/** A table's key attribute names (partition, then sort key), from its DescribeTable. */
export type KeySchemaOf = (tableName: string) => Promise<readonly string[]>;

export interface ConflictCheck {
  /** Items of the request that are part of a transaction in progress, by their index in the request. */
  readonly conflicting: readonly number[];
  /** How many items the request names (a transaction's reasons list has one entry per item). */
  readonly items: number;
  /** For a transaction that may go ahead: marks its items in progress until `release()`. */
  readonly hold: () => () => void;
}

/** The items of transactions in flight, by table and key. */
export class TransactionsInFlight {
  readonly #held = new Map<string, number>();

  /**
   * What the service would do with this request: undefined for an operation that never conflicts
   * here (reads, scans, table operations), else which of its items conflict.
   */
  async check(operation: string, body: unknown, keySchemaOf: KeySchemaOf): Promise<ConflictCheck | undefined> {
    const targets = writeTargets(operation, body);
    if (!targets) return undefined;
    const keys = await Promise.all(targets.map(async ({ tableName, key, item }) => {
      if (key) return itemKey(tableName, key);
      const names = await keySchemaOf(tableName);
      return itemKey(tableName, Object.fromEntries(names.map((name) => [name, item?.[name]])));
    }));
    const conflicting = keys.flatMap((key, index) => (this.#held.has(key) ? [index] : []));
    return {
      conflicting,
      items: keys.length,
      hold: () => {
        if (operation !== 'TransactWriteItems') return () => undefined;
        for (const key of keys) this.#held.set(key, (this.#held.get(key) ?? 0) + 1);
        let released = false;
        return () => {
          if (released) return;
          released = true;
          for (const key of keys) {
            const left = (this.#held.get(key) ?? 1) - 1;
            if (left > 0) this.#held.set(key, left);
            else this.#held.delete(key);
          }
        };
      },
    };
  }

  /** Items held right now (for tests). */
  get size(): number {
    return this.#held.size;
  }
}

interface WriteTarget {
  readonly tableName: string;
  /** `Key` of an Update, Delete or ConditionCheck. */
  readonly key?: Record<string, unknown>;
  /** `Item` of a Put: its key attributes are found through the table's key schema. */
  readonly item?: Record<string, unknown>;
}

function writeTargets(operation: string, body: unknown): WriteTarget[] | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  if (SINGLE_WRITES.has(operation)) return [target(body as Record<string, unknown>)];
  if (operation !== 'TransactWriteItems') return undefined;
  const items = (body as { TransactItems?: unknown }).TransactItems;
  if (!Array.isArray(items)) return undefined;
  return items.map((entry: Record<string, Record<string, unknown> | undefined>) => {
    const kind = TRANSACT_KINDS.find((name) => entry?.[name] !== undefined);
    return target(kind ? entry[kind] as Record<string, unknown> : {});
  });
}

function target(action: Record<string, unknown>): WriteTarget {
  return {
    tableName: String(action.TableName ?? ''),
    key: action.Key as Record<string, unknown> | undefined,
    item: action.Item as Record<string, unknown> | undefined,
  };
}

/** One string per item: the table and its key attributes' wire values, in attribute-name order. */
function itemKey(tableName: string, key: Record<string, unknown>): string {
  const names = Object.keys(key).sort();
  return `${tableName}\u0000${JSON.stringify(names.map((name) => [name, key[name]]))}`;
}
