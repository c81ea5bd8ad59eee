import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP pass-through in front of an engine, for network faults the engine itself cannot play:
 * `cut()` drops every connection and refuses new ones (the port closes, as a partitioned or
 * failed-over endpoint does) while the engine behind keeps its data; `restore()` listens again on
 * the same port. Unlike stopping the engine, nothing is lost on the far side.
 */
export interface TcpFaultProxy {
  /** `host:port` clients should use instead of the engine's. */
  readonly host: string;
  readonly port: number;
  /** Drops every connection and closes the port until {@link restore}. */
  cut(): Promise<void>;
  /** Opens the port again. */
  restore(): Promise<void>;
  readonly isCut: boolean;
  stop(): Promise<void>;
}

export async function startTcpFaultProxy(options: { targetPort: number; targetHost?: string; port?: number }): Promise<TcpFaultProxy> {
  const targetHost = options.targetHost ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = options.port ?? 0;
  let cut = false;

  const listen = async () => {
    const next = createServer((client) => {
      const upstream = createConnection({ host: targetHost, port: options.targetPort });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => resolve());
    });
    port = (next.address() as AddressInfo).port;
    server = next;
  };
  const close = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };

  await listen();
  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get isCut() {
      return cut;
    },
    cut: async () => {
      cut = true;
      await close();
    },
    restore: async () => {
      if (!cut) return;
      cut = false;
      await listen();
    },
    stop: close,
  };
}
