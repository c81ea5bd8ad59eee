import { Redis } from 'ioredis';
import { startRedis, type Engine } from '../engines/index.ts';
import type { DynamoDbFaultRates } from '../faults/index.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The DynamoDB fault rate, split evenly over the proxy's kinds. */
export function splitRate(rate: number): DynamoDbFaultRates {
  const each = rate / 6;
  return { provisionedThroughputExceeded: each, throttling: each, internalServerError: each, transactionConflict: each, lostResponse: each, stall: each };
}

/**
 * Redis faults at fixed points of the send phase: a FLUSHALL at 25 %, a 3 s `CLIENT PAUSE` at
 * 45 %, and at 60 % an outage — the server stopped, then restarted empty on the same port.
 */
export async function scheduleRedisFaults(
  sendMs: number, outageMs: number, current: () => Engine, replace: (engine: Engine) => void, injected: Record<string, number>, log: (line: string) => void,
): Promise<void> {
  const startedMs = Date.now();
  const at = async (fraction: number) => sleep(Math.max(0, startedMs + fraction * sendMs - Date.now()));
  const command = async (...args: string[]) => {
    const client = new Redis({ port: current().port, lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await client.connect();
      await client.call(...(args as [string, ...string[]]));
    } finally {
      client.disconnect();
    }
  };
  await at(0.25);
  await command('FLUSHALL');
  injected['redis.flushall'] = 1;
  log('chaos: redis FLUSHALL');
  await at(0.45);
  await command('CLIENT', 'PAUSE', '3000', 'ALL');
  injected['redis.pause'] = 1;
  log('chaos: redis CLIENT PAUSE 3 s');
  await at(0.6);
  const port = current().port;
  await current().stop();
  injected['redis.outage'] = 1;
  log(`chaos: redis stopped for ${outageMs / 1000} s`);
  await sleep(outageMs);
  replace(await startRedis({ port }));
  log('chaos: redis restarted empty');
}

