import { createServer, connect } from 'node:net';

/** Asks the OS for a free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Polls `probe` until it resolves true, or throws after `timeoutMs` with `describe()` appended
 * (the engine's last output lines), so a failed start says why.
 */
export async function waitUntilReady(
  name: string,
  probe: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; describe?: () => string; exited?: Promise<unknown> },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let exited = false;
  void options.exited?.then(() => (exited = true));
  while (Date.now() < deadline) {
    if (exited) break;
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
  const why = exited ? 'it exited during start-up' : `not ready after ${options.timeoutMs} ms`;
  throw new Error(`${name} failed to start: ${why}.\n${options.describe?.() ?? ''}`.trimEnd());
}

/** Sends one raw line over TCP and resolves with the first chunk of the reply. */
export function tcpExchange(port: number, line: string, timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), timeoutMs);
    socket.once('connect', () => socket.write(line));
    socket.once('data', (data) => {
      clearTimeout(timer);
      socket.end();
      resolve(data.toString('utf8'));
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
