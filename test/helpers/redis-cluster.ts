import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { freePort } from '../../local/engines/index.ts';
import { tcpExchange, waitUntilReady } from '../../local/engines/readiness.ts';
import { startSupervised, type SupervisedProcess } from '../../local/engines/supervised-process.ts';

/**
 * A one-node redis-server cluster owning all 16384 slots, started before the suite and stopped
 * after it: cluster mode as ElastiCache Serverless presents itself (CLUSTER SLOTS discovery,
 * per-slot routing, SCAN per master) on a real engine.
 * @returns a getter of the node's `redis://127.0.0.1:<port>` URL, valid once `before` ran
 */
export function useRedisCluster(name: string): () => string {
  let node: SupervisedProcess | undefined;
  let url = '';
  const configFile = `/tmp/ballast-${name}-${process.pid}.conf`;
  before(async () => {
    const [port, busPort] = [await freePort(), await freePort()];
    url = `redis://127.0.0.1:${port}`;
    node = await startSupervised('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no',
      '--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-announce-ip', '127.0.0.1',
      '--cluster-config-file', configFile, '--dir', '/tmp', '--loglevel', 'warning',
    ]);
    await waitUntilReady('redis-server (cluster)', async () => (await tcpExchange(port, 'PING\r\n')).startsWith('+PONG'), {
      timeoutMs: 10_000, describe: node.output, exited: node.exited,
    });
    assert.match(await tcpExchange(port, 'CLUSTER ADDSLOTSRANGE 0 16383\r\n'), /^\+OK/);
    await waitUntilReady('cluster state ok', async () => (await tcpExchange(port, 'CLUSTER INFO\r\n')).includes('cluster_state:ok'), { timeoutMs: 10_000 });
  });
  after(async () => {
    await node?.stop();
    await rm(configFile, { force: true });
  });
  return () => url;
}
