import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { requireCommand, startSupervised } from './supervised-process.ts';
import { freePort, waitUntilReady } from './readiness.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type Engine } from './engine.ts';

const require = createRequire(import.meta.url);

/** The DynamoDB Local distribution that ships inside the `amplify-dynamodb-simulator` package. */
export function dynamoDbLocalDir(): string {
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

/**
 * Starts AWS's DynamoDB Local (with Streams) in memory on a free port.
 * `-sharedDb` makes every credential/region see the same tables, as one AWS account would.
 */
export async function startDynamoDb(options: { port?: number; startTimeoutMs?: number } = {}): Promise<Engine> {
  requireCommand('java', "DynamoDB Local needs a Java 17+ runtime: run 'apt-get install -y openjdk-17-jre-headless'.");
  const port = options.port ?? (await freePort());
  const dir = dynamoDbLocalDir();
  const proc = await startSupervised(
    'java',
    ['-Xms64m', '-Xmx512m', `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`, '-jar', join(dir, 'DynamoDBLocal.jar'),
      '-inMemory', '-sharedDb', '-port', String(port)],
    { cwd: dir },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  try {
    await waitUntilReady('DynamoDB Local', async () => {
      await client.send(new ListTablesCommand({}));
      return true;
    }, { timeoutMs: options.startTimeoutMs ?? 30_000, describe: proc.output, exited: proc.exited });
  } catch (error) {
    await proc.stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { name: 'dynamodb', endpoint, port, pid: proc.pid, stop: () => proc.stop() };
}

/** What precedes the operation in a DynamoDB request's `X-Amz-Target` header (JSON 1.0 protocol). */
export const DYNAMODB_TARGET_PREFIX = 'DynamoDB_20120810.';

/** The operation (`GetItem`, `TransactWriteItems`...) a DynamoDB request names in its `X-Amz-Target`, for the proxies in front of DynamoDB Local. */
export function dynamoDbOperation(target: string | string[] | undefined): string | undefined {
  return typeof target === 'string' && target.startsWith(DYNAMODB_TARGET_PREFIX) ? target.slice(DYNAMODB_TARGET_PREFIX.length) : undefined;
}
