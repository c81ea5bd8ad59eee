import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { withDefaults } from '../options/index.ts';
import { CacheConfigurationError } from './errors.ts';
import { parseCacheUrl } from './url.ts';
import type { CacheClient } from './scripts.ts';

export interface CacheConnectionOptions {
  /**
   * `redis://[user:password@]host[:port][/db]`, or `rediss://…` for TLS (ElastiCache Serverless
   * requires TLS). The port defaults to 6379; `db` is ignored in cluster mode.
   */
  readonly url: string;
  /**
   * Cluster mode (ioredis `Cluster`): required for ElastiCache Serverless and cluster-mode
   * replication groups; `url` is then the configuration endpoint.
   * @default false
   */
  readonly cluster?: boolean;
  /**
   * How long connecting may take before it counts as a failure. Small: a reader waits this long
   * at most once per outage before the circuit breaker takes over.
   * @default 1_000
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long one command may take before it fails ("Command timed out"). ElastiCache answers in
   * about a millisecond; anything near this limit means the cache is not helping.
   * @default 500
   */
  readonly commandTimeoutMs?: number;
  /**
   * Cap of the exponential reconnect delay (50 ms, 100 ms, … up to this), so a recovered Redis
   * is reconnected to within this long. Reconnection never gives up.
   * @default 2_000
   */
  readonly maxReconnectDelayMs?: number;
  /** Shown by `CLIENT LIST`. @default 'ballast' */
  readonly connectionName?: string;
  /**
   * Receives the client's `error` events (failed reconnects during an outage, for instance).
   * Without a listener ioredis prints them to the console.
   * @default - errors are dropped; failures of commands still reach their callers
   */
  readonly onError?: (error: Error) => void;
  /**
   * Credentials that expire, such as ElastiCache IAM auth tokens: `password()` is asked again for
   * every connection attempt (the first, each reconnect, each cluster node), never cached by the
   * client, so a reconnect after a long pause — a Lambda thawed after 20 minutes — authenticates
   * with a token that is still valid. Mutually exclusive with credentials in `url`.
   * @default - the user and password in `url`, if any
   */
  readonly auth?: CacheAuth;
}

/** A user whose password changes over time; see {@link CacheConnectionOptions.auth}. */
export interface CacheAuth {
  readonly username: string;
  /** The password to send now. Synchronous: ioredis reads it while it builds the `AUTH`/`HELLO`. */
  readonly password: () => string;
}

const defaults = { cluster: false, connectTimeoutMs: 1_000, commandTimeoutMs: 500, maxReconnectDelayMs: 2_000, connectionName: 'ballast' };

/**
 * Creates a Redis/Valkey client for the cache from a URL, standalone or cluster, TLS when the
 * scheme is `rediss://`. The client fails fast rather than queueing: it connects lazily (on
 * {@link connectCacheClient} or the first command), has no offline queue (a command while
 * disconnected fails at once instead of waiting for a reconnect) and resends nothing after a
 * reconnect (a command in flight when the connection dropped fails), retries a command at most once,
 * and bounds connects and commands with short timeouts. Reconnection runs in the background.
 *
 * @example
 * import { createCacheClient } from '../shared/cache/index.ts';
 * const redis = createCacheClient({ url: process.env.BALLAST_CACHE_URL!, cluster: process.env.BALLAST_CACHE_CLUSTER === 'true' });
 */
export function createCacheClient(options: CacheConnectionOptions): CacheClient {
  const merged = withDefaults(defaults, options);
  for (const field of ['connectTimeoutMs', 'commandTimeoutMs', 'maxReconnectDelayMs'] as const) {
    if (!(merged[field] > 0)) throw new CacheConfigurationError(`createCacheClient: ${field} must be > 0, got ${merged[field]}`);
  }
  const target = parseCacheUrl(merged.url);
  if (merged.auth && (target.username !== undefined || target.password !== undefined)) {
    throw new CacheConfigurationError('createCacheClient: credentials are given both in url and in auth: keep one of them (the url without user:password@, for IAM auth)');
  }
  const retry = (times: number) => Math.min(50 * 2 ** Math.min(times, 16), merged.maxReconnectDelayMs);
  const common = {
    username: target.username,
    password: target.password,
    ...(target.tls ? { tls: { servername: target.host } } : {}),
    connectTimeout: merged.connectTimeoutMs,
    commandTimeout: merged.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    // A command in flight when the connection dropped fails rather than being sent again on the
    // next one, long after its caller moved on: the caller retries or answers from the table (a
    // fill replayed on a server that came back empty would meet no ticket and be refused anyway).
    autoResendUnfulfilledCommands: false,
    connectionName: merged.connectionName,
  } satisfies RedisOptions;
  const client: CacheClient = merged.cluster
    ? new Cluster([{ host: target.host, port: target.port }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: retry,
      slotsRefreshTimeout: merged.connectTimeoutMs,
      // Keep hostnames as given: TLS certificates name the endpoint, not its IP addresses.
      dnsLookup: (address, callback) => callback(null, address),
      redisOptions: common,
    })
    : new Redis({ ...common, host: target.host, port: target.port, db: target.db, lazyConnect: true, enableOfflineQueue: false, retryStrategy: retry });
  client.on('error', (error: Error) => merged.onError?.(error));
  if (merged.auth) useFreshPasswords(client, merged.auth, (error) => merged.onError?.(error));
  return client;
}

/**
 * Makes every connection of `client` authenticate with a password asked from `auth` at that
 * moment. ioredis reads `options.password` once per connection attempt, in `Redis#connect` (which
 * builds the `AUTH`/`HELLO` arguments from it, for the first connect and every reconnect alike),
 * so `options.password` becomes a getter. A `Cluster` copies its `redisOptions` into its
 * connection pool at construction and each node copies them again at creation (reading the
 * getter once), and nodes are created lazily (`lazyConnect`) and announced with `+node` before
 * they connect: the getter is installed on each new node there, and on the cluster's own
 * `redisOptions`, which `duplicate()` reads.
 */
function useFreshPasswords(client: CacheClient, auth: CacheAuth, onError: (error: Error) => void): void {
  const password = () => {
    try {
      return auth.password();
    } catch (cause) {
      // Never throw inside ioredis' connect (it would stay "connecting" forever): this attempt
      // fails AUTH instead, and the next reconnect asks again.
      onError(new CacheConfigurationError(`cache auth: no password for ${auth.username}: ${(cause as Error).message}`, { cause }));
      return '';
    }
  };
  const install = (options: RedisOptions) => {
    options.username = auth.username;
    Object.defineProperty(options, 'password', { get: password, enumerable: true, configurable: true });
  };
  if (client instanceof Cluster) {
    install(client.options.redisOptions ?? (client.options.redisOptions = {}));
    client.on('+node', (node: Redis) => install(node.options));
  } else {
    install(client.options);
  }
}

/**
 * Waits until a lazily connecting client is ready: starts the connection if nothing has started
 * it yet, or waits for the attempt in progress. Rejects when that attempt fails (ioredis then keeps
 * reconnecting in the background) or after `timeoutMs` (a cluster whose nodes cannot be reached
 * may otherwise never settle). Returns at once in any other state, so a disconnected client's
 * commands fail fast instead of waiting for a reconnect.
 *
 * @param timeoutMs - the longest wait. @default 5_000
 * @example
 * import { connectCacheClient, createCacheClient } from '../shared/cache/index.ts';
 * const redis = createCacheClient({ url });
 * await connectCacheClient(redis);
 */
export async function connectCacheClient(client: CacheClient, timeoutMs = 5_000): Promise<void> {
  const initial = client.status;
  if (initial !== 'wait' && initial !== 'connecting' && initial !== 'connect') return;
  await new Promise<void>((resolve, reject) => {
    const settle = (error?: Error) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('close', onClose);
      client.off('end', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onReady = () => settle();
    const onClose = () => settle(new Error('cache connection closed before it was ready'));
    const timer = setTimeout(() => settle(new Error(`cache connection not ready after ${timeoutMs} ms`)), timeoutMs);
    client.once('ready', onReady);
    client.once('close', onClose);
    client.once('end', onClose);
    if (initial === 'wait') client.connect().then(() => settle(), (error: Error) => settle(error));
  });
}
