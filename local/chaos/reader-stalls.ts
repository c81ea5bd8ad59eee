import { STATE_TABLE } from '../../shared/tables/index.ts';

/**
 * The chaos run's slow readers: a share of the read API's table reads (a strongly consistent
 * `GetItem` of a cached entity's item) answered late, on the way back. The answer is what the table
 * held when it was read; by the time it arrives, a hot item has often been written again and its
 * invalidation has run, so the reader's fill is late and older than the tombstone: the cache must
 * refuse it, and `staleReads` sees any read that would otherwise be answered from it.
 * For the DynamoDB fault proxy's `holdAnswerOf`.
 */
export interface ReaderStalls {
  /** The proxy's `holdAnswerOf`. */
  readonly holdAnswerOf: (operation: string, body: unknown) => number;
  /** Share of the table reads held (0 turns the fault off). */
  rate: number;
  /** Table reads held so far. */
  readonly held: () => number;
}

export interface ReaderStallsOptions {
  /** The cached entities' names: their items' keys are `<entity>#<id>`. */
  readonly entities: readonly string[];
  /** How long an answer is held: past a hot item's next commit and invalidation, short of the reader's request timeout. */
  readonly holdMs: number;
  readonly random: () => number;
}

export function readerStalls(options: ReaderStallsOptions): ReaderStalls {
  const prefixes = options.entities.map((entity) => `${entity}#`);
  let held = 0;
  const stalls: ReaderStalls = {
    rate: 0,
    held: () => held,
    holdAnswerOf: (operation, body) => {
      if (operation !== 'GetItem' || stalls.rate === 0) return 0;
      const request = body as { ConsistentRead?: unknown; Key?: Record<string, { S?: unknown } | undefined> } | undefined;
      const pk = request?.Key?.[STATE_TABLE.partitionKey]?.S;
      if (request?.ConsistentRead !== true || typeof pk !== 'string' || !prefixes.some((prefix) => pk.startsWith(prefix))) return 0;
      if (options.random() >= stalls.rate) return 0;
      held += 1;
      return options.holdMs;
    },
  };
  return stalls;
}
