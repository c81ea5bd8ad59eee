import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, GetItemCommand, TransactionCanceledException, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { NoOpLogger } from '@smithy/core/client';
import { awsClientConfig, FUNCTION_TIMEOUT_ENV } from '../../shared/aws/index.ts';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { synthStack } from '../helpers/infra.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('AWS SDK clients of the functions: bounded connection and request timeouts', () => {
  it('derives both from the function timeout, below it', () => {
    for (const timeoutMs of [2_000, 10_000, 30_000, 120_000]) {
      const { requestHandler } = awsClientConfig({ [FUNCTION_TIMEOUT_ENV]: String(timeoutMs) });
      assert.ok(requestHandler.requestTimeout < timeoutMs && requestHandler.connectionTimeout < timeoutMs, `timeout ${timeoutMs}`);
      assert.ok(requestHandler.requestTimeout <= 5_000);
      assert.equal(requestHandler.throwOnRequestTimeout, true, 'without it the SDK only warns');
    }
    assert.throws(() => awsClientConfig({ [FUNCTION_TIMEOUT_ENV]: 'soon' }), /BALLAST_FUNCTION_TIMEOUT_MS must be a positive number/);
  });

  it('a hung endpoint (accepts, never answers) fails the call within the request timeout instead of eating the invocation', async () => {
    const sockets: net.Socket[] = [];
    const server = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new DynamoDBClient({
      ...awsClientConfig({ [FUNCTION_TIMEOUT_ENV]: '2000' }),
      endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1,
    });
    try {
      const startedMs = Date.now();
      await assert.rejects(client.send(new GetItemCommand({ TableName: 'ttt', Key: { pk: { S: 'a' } } })), (error: Error) => error.name === 'TimeoutError');
      assert.ok(Date.now() - startedMs < 2_000, `gave up after ${Date.now() - startedMs} ms`);
    } finally {
      client.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a refused request's input is not copied through the SDK's log filter just to be discarded", async () => {
    // A client whose every TransactWriteItems DynamoDB cancels, counting the filter's calls.
    const filterCalls = async (config: object) => {
      const client = new DynamoDBClient({ ...config, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
      let calls = 0;
      client.middlewareStack.add((_next, context) => async () => {
        const filter = context.inputFilterSensitiveLog as (input: unknown) => unknown;
        context.inputFilterSensitiveLog = (input: unknown) => ((calls += 1), filter(input));
        throw new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }] });
      }, { step: 'build', name: 'cancelEveryTransaction' });
      const items = Array.from({ length: 20 }, (_, i) => ({ Put: { TableName: 't', Item: { pk: { S: `k${i}` }, n: { N: '1' } } } }));
      try {
        await assert.rejects(client.send(new TransactWriteItemsCommand({ TransactItems: items })), TransactionCanceledException);
        return calls;
      } finally {
        client.destroy();
      }
    };
    // The SDK's default logger discards the line, yet its input was filtered for it first.
    assert.equal(await filterCalls({}), 1);
    assert.equal(await filterCalls(awsClientConfig()), 0);
    // AND the SDK still takes it for its default (by class and by name), so the warnings it sends
    // to the console then (a saturated socket pool, a queue URL against the endpoint) still go there
    const { logger } = awsClientConfig();
    assert.ok(logger instanceof NoOpLogger && logger.constructor.name === 'NoOpLogger');
  });

  it('every SDK client the functions create goes through awsClientConfig', () => {
    const files = [
      ...readdirSync(`${root}functions`, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => `functions/${f}`),
      ...readdirSync(`${root}shared`, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => `shared/${f}`),
    ];
    const offenders = files.flatMap((file) => {
      const text = readFileSync(`${root}${file}`, 'utf8').split('\n').filter((line) => !line.trim().startsWith('*'));
      return text.filter((line) => /new \w+Client\(/.test(line) && !/awsClientConfig\(/.test(line)).map((line) => `${file}: ${line.trim()}`);
    });
    // The CLI's operations (shared/operations) run on an operator's machine, not in a function.
    assert.deepEqual(offenders.filter((o) => !o.startsWith('shared/operations/')), []);
  });

  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: every function is told its own timeout, and its SDK timeouts fall below it`, () => {
      // CDK's own custom-resource handler (it empties the VPC's default security group) is not ours.
      const functions = Object.entries(synthStack(env).template.findResources('AWS::Lambda::Function'))
        .filter(([, fn]) => fn.Properties.Handler !== '__entrypoint__.handler');
      assert.ok(functions.length >= 4);
      for (const [id, fn] of functions) {
        const props = fn.Properties as { Timeout?: number; Environment?: { Variables?: Record<string, string> } };
        const timeoutMs = (props.Timeout ?? 3) * 1000;
        const told = props.Environment?.Variables?.[FUNCTION_TIMEOUT_ENV];
        assert.equal(told, String(timeoutMs), `${id} is told its timeout`);
        const { requestHandler } = awsClientConfig({ [FUNCTION_TIMEOUT_ENV]: told });
        assert.ok(requestHandler.requestTimeout < timeoutMs, id);
      }
    });
  }
});
