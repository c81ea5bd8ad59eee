/**
 * `npm start`: runs ballast's local engines and keeps them up until Ctrl-C.
 *
 * The local cloud (the synthesized stack on these engines, with Lambda semantics and a demo
 * workload) builds on this; today it starts the engines, prints where they listen and how to point
 * an AWS SDK at them, and stops them cleanly on SIGINT/SIGTERM.
 */
import { engineEnvironment, startEngines, stopOnSignals } from './engines/index.ts';

const log = (line: string) => process.stdout.write(`${line}\n`);

log('ballast local: starting engines (DynamoDB Local, fauxqs, redis-server)...');
const startedAtMs = Date.now();
const engines = await startEngines();
log(`  dynamodb  ${engines.dynamodb.endpoint}   (DynamoDB Local + Streams, in memory, pid ${engines.dynamodb.pid})`);
log(`  sqs       ${engines.sqs.endpoint}   (fauxqs, in this process)`);
log(`  redis     ${engines.redis.endpoint}   (redis-server, no persistence, pid ${engines.redis.pid})`);
log(`ready in ${Date.now() - startedAtMs} ms.`);
log('');
log('Point any AWS SDK or CLI at them with:');
log(`  ${Object.entries(engineEnvironment(engines)).map(([key, value]) => `export ${key}=${value}`).join('\n  ')}`);
log('');
log('Press Ctrl-C to stop.');

stopOnSignals(engines.stop, (signal) => log(`\n${signal}: stopping engines...`));
// Keep the process alive until a signal arrives.
setInterval(() => {}, 1 << 30);
