import { requireCommand, startSupervised } from './supervised-process.ts';
import { freePort, tcpExchange, waitUntilReady } from './readiness.ts';
import type { Engine } from './engine.ts';

/**
 * Starts a throw-away `redis-server` (wire-compatible with ElastiCache Valkey) on a free port,
 * with persistence off. Pass `port` to restart a stopped server where clients expect it.
 */
export async function startRedis(options: { port?: number; startTimeoutMs?: number } = {}): Promise<Engine> {
  requireCommand('redis-server', "Install it with 'apt-get install -y redis-server' (Debian's package; ElastiCache Valkey speaks the same protocol).");
  const port = options.port ?? (await freePort());
  const proc = await startSupervised('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--protected-mode', 'no', '--daemonize', 'no', '--dir', '/tmp', '--loglevel', 'warning',
  ]);
  try {
    await waitUntilReady('redis-server', async () => (await tcpExchange(port, 'PING\r\n')).startsWith('+PONG'), {
      timeoutMs: options.startTimeoutMs ?? 10_000, describe: proc.output, exited: proc.exited,
    });
  } catch (error) {
    await proc.stop();
    throw error;
  }
  return { name: 'redis', endpoint: `redis://127.0.0.1:${port}`, port, pid: proc.pid, stop: () => proc.stop() };
}
