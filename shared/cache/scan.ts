import { Cluster } from 'ioredis';
import type { CacheClient } from './scripts.ts';

/** Keys SCAN asks each node for per round trip (a hint to Redis, not a limit). */
const SCAN_COUNT = 200;

/**
 * Up to `limit` distinct keys matching `pattern`, in SCAN order (which follows the hash table, so
 * a partial scan is a spread-out sample, not the most recent keys). In cluster mode every master
 * is scanned in turn, since SCAN only sees the node it runs on.
 *
 * @example
 * import { scanKeys, valueKeyPattern } from '../shared/cache/index.ts';
 * const keys = await scanKeys(redis, valueKeyPattern('widget', 1), 100);
 */
export async function scanKeys(client: CacheClient, pattern: string, limit: number): Promise<string[]> {
  const found = new Set<string>();
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (const key of keys) {
        if (found.size >= limit) return [...found];
        found.add(key);
      }
    } while (cursor !== '0' && found.size < limit);
  }
  return [...found];
}
