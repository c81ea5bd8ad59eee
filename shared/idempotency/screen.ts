import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CONTROL_TABLE } from '../tables/index.ts';
import { recordKey, type IdempotencyRecord } from './record.ts';

/**
 * The idempotency records of a batch's jobs as one consistent read found them, by idempotency key
 * (a job without a record is absent). A record that would have refused the job's Put then answers
 * the job as its refused Put would have: it was already complete (or in progress) at `readAtMs`.
 */
export interface ScreenedRecords {
  readonly readAtMs: number;
  readonly records: ReadonlyMap<string, IdempotencyRecord>;
}

/** BatchGetItem's limit on keys per request. */
const MAX_KEYS_PER_READ = 100;

/**
 * Reads the records of `idempotencyKeys` (consistent reads, 100 keys a request, side by side).
 * Keys DynamoDB leaves unprocessed (throttling) are simply not screened: their jobs commit as usual.
 */
export async function readRecords(
  documents: DynamoDBDocumentClient, tableName: string, idempotencyKeys: readonly string[], readAtMs: number,
): Promise<ScreenedRecords> {
  const keys = [...new Set(idempotencyKeys)];
  const records = new Map<string, IdempotencyRecord>();
  const chunks = Array.from({ length: Math.ceil(keys.length / MAX_KEYS_PER_READ) }, (_, i) => keys.slice(i * MAX_KEYS_PER_READ, (i + 1) * MAX_KEYS_PER_READ));
  const byRecordKey = new Map(keys.map((key) => [recordKey(key), key]));
  await Promise.all(chunks.map(async (chunk) => {
    const out = await documents.send(new BatchGetCommand({
      RequestItems: { [tableName]: { Keys: chunk.map((key) => ({ [CONTROL_TABLE.partitionKey]: recordKey(key) })), ConsistentRead: true } },
    }));
    for (const item of out.Responses?.[tableName] ?? []) {
      const key = byRecordKey.get(String(item[CONTROL_TABLE.partitionKey]));
      if (key !== undefined) records.set(key, item as IdempotencyRecord);
    }
  }));
  return { readAtMs, records };
}

/**
 * The share of recent one-shot commits that met a duplicate, over the last `window` of them: a
 * sandbox screens its batches while it is at or above a bound, and stops once duplicates are rare
 * again (a screen costs a read and a round trip that a batch without duplicates never pays back).
 *
 * Until the window is full the share is taken over the commits seen, once there are `minimum` of
 * them: the sandboxes Lambda adds in a retry storm are the ones meeting its duplicates, and a share
 * over a full window would let each commit a tenth of a window's duplicates (each cancelling a
 * group) before it screens.
 */
export class DuplicateShare {
  readonly #outcomes: boolean[] = [];
  #duplicates = 0;
  #next = 0;
  readonly #window: number;
  readonly #minimum: number;

  constructor(window: number, minimum = window) {
    this.#window = window;
    this.#minimum = Math.min(minimum, window);
  }

  /** Records one commit's outcome. */
  add(duplicate: boolean): void {
    if (this.#outcomes.length < this.#window) {
      this.#outcomes.push(duplicate);
    } else {
      if (this.#outcomes[this.#next]) this.#duplicates -= 1;
      this.#outcomes[this.#next] = duplicate;
      this.#next = (this.#next + 1) % this.#window;
    }
    if (duplicate) this.#duplicates += 1;
  }

  /** Duplicates among the recorded outcomes, as a share of them (0 until `minimum` are recorded). */
  get share(): number {
    return this.#outcomes.length < this.#minimum ? 0 : this.#duplicates / this.#outcomes.length;
  }
}
