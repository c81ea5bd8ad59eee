import { connect as connectPlain, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { CacheConnectionOptions } from '../cache/connection.ts';
import { parseCacheUrl } from '../cache/url.ts';

/** Where the cache is and how to reach it: what the cache-using functions connect with. */
export type CachePingTarget = Pick<CacheConnectionOptions, 'url' | 'cluster' | 'auth'>;

/**
 * Connects to the cache the way the functions that use it do (TLS for `rediss://` with the
 * endpoint's name checked, the same credentials — a fresh IAM token when `auth` is set) and
 * resolves on a `PONG`, so a readiness check proves the endpoint answers *and* admits this
 * function. The connection is closed afterwards, answer or not.
 *
 * It speaks RESP over one socket rather than through the cache client: the worker uses the cache
 * for nothing else, and the client library would be a fifth of its bundle and cold start. In
 * cluster mode the configuration endpoint's node answers for the cluster: admission is per user,
 * not per node.
 *
 * @param timeoutMs - the longest the whole exchange may take. @default 2_000
 */
export async function pingCache(target: CachePingTarget, timeoutMs = 2_000): Promise<void> {
  const endpoint = parseCacheUrl(target.url);
  const where = `${endpoint.host}:${endpoint.port}`;
  let socket: Socket | undefined;
  try {
    const username = target.auth?.username ?? endpoint.username;
    const password = target.auth ? target.auth.password() : endpoint.password;
    const commands = [...(password === undefined ? [] : [['AUTH', ...(username ? [username] : []), password]]), ['PING']];
    const connection = (socket = endpoint.tls
      ? connectTls({ host: endpoint.host, port: endpoint.port, servername: endpoint.host })
      : connectPlain({ host: endpoint.host, port: endpoint.port }));
    const replies = await new Promise<string[]>((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      connection.once('error', fail);
      connection.once('close', () => fail(new Error('connection closed before the answer')));
      connection.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        // AUTH and PING answer with one line each: `+OK`, `+PONG` or `-ERR …`.
        const lines = buffered.split('\r\n').slice(0, -1);
        if (lines.length < commands.length) return;
        clearTimeout(timer);
        resolve(lines);
      });
      connection.write(commands.map(resp).join(''));
    });
    const refused = replies.find((reply) => reply.startsWith('-'));
    if (refused) throw new Error(`refused: ${refused.slice(1)}`);
    const pong = replies.at(-1);
    if (pong !== '+PONG') throw new Error(`cache answered ${pong}`);
  } catch (error) {
    throw new Error(`cache ${where} did not answer PING: ${(error as Error).message}`, { cause: error });
  } finally {
    socket?.destroy();
  }
}

/** A command as a RESP array of bulk strings. */
function resp(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}
