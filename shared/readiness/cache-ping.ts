import { connect as connectTcp } from 'node:net';
import { connect as connectTls } from 'node:tls';

/**
 * Sends one RESP `PING` to a Redis/Valkey URL (`redis://` plain, `rediss://` TLS) and resolves on
 * `+PONG`. A readiness check only needs to know the endpoint answers, without a client library.
 */
export function pingCache(url: string, timeoutMs = 2_000): Promise<void> {
  const target = new URL(url);
  const port = Number(target.port || 6379);
  const host = target.hostname;
  return new Promise((resolve, reject) => {
    const socket = target.protocol === 'rediss:' ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
    const timer = setTimeout(() => socket.destroy(new Error(`cache ${host}:${port} did not answer within ${timeoutMs} ms`)), timeoutMs);
    socket.once(target.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      clearTimeout(timer);
      socket.end();
      const reply = data.toString('utf8');
      if (reply.startsWith('+PONG')) resolve();
      else reject(new Error(`cache answered ${reply.trim()}`));
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
