// Starts the engines, prints their pids as one JSON line, then idles without any signal handler:
// a parent that dies this way runs no cleanup code, so only the watchdogs can stop the engines.
import { startEngines } from '../../local/engines/index.ts';

const engines = await startEngines();
process.stdout.write(`${JSON.stringify({ dynamodb: engines.dynamodb.pid, redis: engines.redis.pid })}\n`);
setInterval(() => {}, 1 << 30);
