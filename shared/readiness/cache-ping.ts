import { connectCacheClient, createCacheClient, type CacheConnectionOptions } from '../cache/connection.ts';

/** Where the cache is and how to reach it: what the cache-using functions connect with. */
export type CachePingTarget = Pick<CacheConnectionOptions, 'url' | 'cluster' | 'auth'>;

/**
 * Connects to the cache the way the functions that use it do (same client: TLS for `rediss://`,
 * cluster discovery, the same credentials — an IAM token when `auth` is set) and resolves on a
 * `PONG`, so a readiness check proves the endpoint answers *and* admits this function. The client
 * is disconnected afterwards, answer or not.
 *
 * @param timeoutMs - the longest the connection and the `PING` may each take. @default 2_000
 */
export async function pingCache(target: CachePingTarget, timeoutMs = 2_000): Promise<void> {
  let lastError: Error | undefined;
  const client = createCacheClient({
    ...target,
    connectTimeoutMs: timeoutMs,
    commandTimeoutMs: timeoutMs,
    connectionName: 'ballast-readiness',
    onError: (error) => (lastError = error),
  });
  try {
    await connectCacheClient(client, timeoutMs);
    const reply = await client.ping();
    if (reply !== 'PONG') throw new Error(`cache answered ${reply}`);
  } catch (error) {
    const reason = lastError && lastError !== error ? ` (${lastError.message})` : '';
    throw new Error(`cache ${hostOf(target.url)} did not answer PING: ${(error as Error).message}${reason}`, { cause: error });
  } finally {
    client.disconnect();
  }
}

/** `host:port` of the URL, never its credentials. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'with an unparsable url';
  }
}
