import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startDynamoDb, startRedis } from '../../local/engines/index.ts';
import { exitOf, runNode, survivors, waitForOutput } from '../helpers/processes.ts';

const child = fileURLToPath(new URL('../helpers/engines-child.ts', import.meta.url));

describe('engine lifecycle', () => {
  it('stop() leaves no engine process behind', async () => {
    const [dynamodb, redis] = await Promise.all([startDynamoDb(), startRedis()]);
    await Promise.all([dynamodb.stop(), redis.stop()]);
    assert.deepEqual(await survivors([dynamodb.pid, redis.pid], 1_000), []);
  });

  for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT'] as const) {
    it(`a parent killed by ${signal} without cleanup code leaves no engine running`, async () => {
      // GIVEN a process that started the engines and installed no signal handler
      const parent = runNode(child);
      const pids = JSON.parse((await waitForOutput(parent, /\}\n/, 30_000)).trim()) as { dynamodb: number; redis: number };
      // WHEN it dies
      parent.kill(signal);
      await exitOf(parent, 10_000);
      // THEN the watchdogs stop its engines
      assert.deepEqual(await survivors([pids.dynamodb, pids.redis], 10_000), []);
    });
  }

  it('a missing redis-server or java is reported with what to install', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await assert.rejects(startRedis(), /'redis-server' was not found on the PATH\. Install it with 'apt-get install -y redis-server'/);
      await assert.rejects(startDynamoDb(), /'java' was not found on the PATH\. .*openjdk-17-jre-headless/);
    } finally {
      process.env.PATH = path;
    }
  });
});
