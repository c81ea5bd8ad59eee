import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import {
  ConditionalCheckFailedException, CreateTableCommand, DynamoDBClient, GetItemCommand, IdempotentParameterMismatchException,
  InternalServerError, ProvisionedThroughputExceededException, PutItemCommand, ThrottlingException, TransactionCanceledException,
  TransactionConflictException, TransactWriteItemsCommand, UpdateItemCommand, type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { freePort, LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDb, type Engine } from '../../local/engines/index.ts';
import { startDynamoDbFaultProxy, type DynamoDbFaultProxyOptions } from '../../local/faults/index.ts';
import { waitFor } from '../helpers/wait.ts';

const TABLE = 'fault-proxy';

function sdkClient(endpoint: string, maxAttempts?: number): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, ...(maxAttempts ? { maxAttempts } : {}) });
}

/** Returns `draws` in order, then 0.999 forever: with rates below 0.999, only the scripted requests get faults. */
function scripted(...draws: number[]): () => number {
  let next = 0;
  return () => draws[next++] ?? 0.999;
}

const put = (pk: string, condition?: string) => new PutItemCommand({
  TableName: TABLE, Item: { pk: { S: pk } }, ...(condition ? { ConditionExpression: condition } : {}),
});
const newItem = (pk: string): TransactWriteItem => ({
  Put: { TableName: TABLE, Item: { pk: { S: pk } }, ConditionExpression: 'attribute_not_exists(pk)' },
});

/** A raw JSON-protocol call, to see the bytes the SDK would parse. */
async function raw(endpoint: string, operation: string, body: unknown) {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'x-amz-target': `DynamoDB_20120810.${operation}`, 'content-type': 'application/x-amz-json-1.0',
      authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('DynamoDB fault proxy', () => {
  let dynamodb: Engine | undefined;
  let direct: DynamoDBClient | undefined;

  before(async () => {
    dynamodb = await startDynamoDb();
    direct = sdkClient(dynamodb.endpoint, 1);
    const proxy = await startDynamoDbFaultProxy({ target: dynamodb.endpoint });
    const viaProxy = sdkClient(proxy.endpoint, 1);
    try {
      await viaProxy.send(new CreateTableCommand({
        TableName: TABLE, BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }));
    } finally {
      viaProxy.destroy();
      await proxy.stop();
    }
  });
  after(async () => {
    direct?.destroy();
    await dynamodb?.stop();
  });

  /** A proxy in front of DynamoDB Local, with a client that never retries and one with the SDK's default retries. */
  async function startProxy(t: TestContext, options: Omit<DynamoDbFaultProxyOptions, 'target'> = {}) {
    assert.ok(dynamodb);
    const proxy = await startDynamoDbFaultProxy({ target: dynamodb.endpoint, ...options });
    const once = sdkClient(proxy.endpoint, 1);
    const retrying = sdkClient(proxy.endpoint);
    t.after(async () => {
      once.destroy();
      retrying.destroy();
      await proxy.stop();
    });
    return { proxy, once, retrying };
  }

  /** Reads straight from DynamoDB Local, not through the proxy. */
  async function stored(pk: string): Promise<boolean> {
    assert.ok(direct);
    const { Item } = await direct.send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: pk } }, ConsistentRead: true }));
    return Item !== undefined;
  }

  it('with all rates 0, forwards every request and returns its answer unchanged', async (t) => {
    const { proxy, once } = await startProxy(t);
    await once.send(put('plain-1'));
    const { Item } = await once.send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'plain-1' } }, ConsistentRead: true }));
    assert.deepEqual(Item, { pk: { S: 'plain-1' } });
    await once.send(new TransactWriteItemsCommand({ TransactItems: [newItem('plain-2'), newItem('plain-3')] }));
    assert.ok((await stored('plain-2')) && (await stored('plain-3')), 'the transaction was applied');
    await assert.rejects(once.send(put('plain-1', 'attribute_not_exists(pk)')), ConditionalCheckFailedException, "DynamoDB Local's own errors pass through");

    const key = { TableName: TABLE, Key: { pk: { S: 'plain-1' } }, ConsistentRead: true };
    const viaProxy = await raw(proxy.endpoint, 'GetItem', key);
    const straight = await raw(dynamodb!.endpoint, 'GetItem', key);
    assert.deepEqual([viaProxy.status, viaProxy.text, viaProxy.headers.get('x-amz-crc32')], [straight.status, straight.text, straight.headers.get('x-amz-crc32')]);

    assert.equal(proxy.forwarded(), 5);
    assert.deepEqual(Object.values(proxy.injected()), [0, 0, 0, 0, 0, 0]);
  });

  const errorKinds = [
    { kind: 'provisionedThroughputExceeded', ErrorClass: ProvisionedThroughputExceededException, status: 400, fault: 'client' },
    { kind: 'throttling', ErrorClass: ThrottlingException, status: 400, fault: 'client' },
    { kind: 'internalServerError', ErrorClass: InternalServerError, status: 500, fault: 'server' },
  ] as const;
  for (const { kind, ErrorClass, status, fault } of errorKinds) {
    it(`${kind}: arrives as the SDK's ${ErrorClass.name}, is not forwarded, and the SDK's default retries get past it`, async (t) => {
      const { proxy, once, retrying } = await startProxy(t, { rates: { [kind]: 0.5 }, random: scripted(0, 0) });
      const error = await once.send(put(`${kind}-1`)).catch((caught: unknown) => caught);
      assert.ok(error instanceof ErrorClass, `expected ${ErrorClass.name}, got ${String(error)}`);
      assert.equal(error.name, ErrorClass.name);
      assert.equal(error.$fault, fault);
      assert.equal(error.$metadata.httpStatusCode, status);
      assert.match(error.$metadata.requestId ?? '', /^[A-Z0-9]{52}$/);
      // DynamoDB's model has no retryable trait: the SDK retries these by name (throttling) or status (5xx).
      assert.equal(error.$retryable, undefined);
      assert.equal(await stored(`${kind}-1`), false, 'never reached DynamoDB');

      const output = await retrying.send(put(`${kind}-2`));
      assert.equal(output.$metadata.attempts, 2);
      assert.equal(await stored(`${kind}-2`), true);
      assert.equal(proxy.injected()[kind], 2);
      assert.equal(proxy.injected('PutItem')[kind], 2);
      assert.equal(proxy.forwarded(), 1);
    });
  }

  it('error answers have the wire format of the service: __type, x-amzn-ErrorType, request id, crc32', async (t) => {
    const { proxy } = await startProxy(t, { rates: { throttling: 1 } });
    const answer = await raw(proxy.endpoint, 'PutItem', { TableName: TABLE, Item: { pk: { S: 'wire' } } });
    assert.equal(answer.status, 400);
    assert.equal(answer.headers.get('content-type'), 'application/x-amz-json-1.0');
    assert.match(answer.headers.get('x-amzn-requestid') ?? '', /^[A-Z0-9]{52}$/);
    assert.match(answer.headers.get('x-amzn-errortype') ?? '', /^ThrottlingException:/);
    assert.equal(answer.headers.get('x-amz-crc32'), String(crc32(Buffer.from(answer.text))));
    const body = JSON.parse(answer.text) as { __type: string; message: string };
    assert.equal(body.__type, 'com.amazon.coral.availability#ThrottlingException');
    assert.ok(body.message.length > 0);
  });

  it('transactionConflict: TransactWriteItems is cancelled with one TransactionConflict among one reason per item; the SDK does not retry it', async (t) => {
    const { proxy, once, retrying } = await startProxy(t, { rates: { transactionConflict: 0.5 }, random: scripted(0.2, 0.3) });
    const items = [newItem('conflict-1'), newItem('conflict-2'), newItem('conflict-3')];
    const error = await once.send(new TransactWriteItemsCommand({ TransactItems: items })).catch((caught: unknown) => caught);
    assert.ok(error instanceof TransactionCanceledException, `expected TransactionCanceledException, got ${String(error)}`);
    const reasons = error.CancellationReasons ?? [];
    assert.equal(reasons.length, items.length);
    assert.deepEqual(reasons.filter((reason) => reason.Code === 'TransactionConflict'), [{ Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }]);
    assert.equal(reasons.filter((reason) => reason.Code === 'None').length, items.length - 1);
    assert.equal(error.message, `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`);
    assert.equal(error.$metadata.httpStatusCode, 400);
    assert.equal(await stored('conflict-1'), false, 'never reached DynamoDB');

    // Not a throttling or transient error for the SDK: the caller has to retry a conflict itself.
    const again = await retrying.send(new TransactWriteItemsCommand({ TransactItems: items })).catch((caught: unknown) => caught);
    assert.ok(again instanceof TransactionCanceledException);
    assert.equal(again.$metadata.attempts, 1);

    // Other operations are forwarded even when the draw falls in this bucket.
    proxy.rates.transactionConflict = 1;
    await once.send(put('conflict-put'));
    assert.equal(await stored('conflict-put'), true);
    assert.equal(proxy.injected().transactionConflict, 2);
    assert.equal(proxy.injected('PutItem').transactionConflict, 0);
  });

  it('lostResponse: DynamoDB applies the request, yet the caller sees a connection reset', async (t) => {
    const { proxy, once } = await startProxy(t, { rates: { lostResponse: 1 } });
    const error = await once.send(put('lost-1')).catch((caught: unknown) => caught);
    assert.ok(error instanceof Error, `expected a network error, got ${String(error)}`);
    // The SDK's node handler renames ECONNRESET errors "TimeoutError"; there is no HTTP status.
    assert.deepEqual([(error as NodeJS.ErrnoException).code, error.name, error.message], ['ECONNRESET', 'TimeoutError', 'socket hang up']);
    assert.equal(await stored('lost-1'), true, 'the write was applied');
    assert.equal(proxy.forwarded(), 1);
    assert.equal(proxy.injected().lostResponse, 1);
  });

  it('lostResponse: the retried TransactWriteItems carries the same ClientRequestToken, so its attribute_not_exists Put still succeeds', async (t) => {
    const { proxy, retrying } = await startProxy(t, { rates: { lostResponse: 0.5 }, random: scripted(0) });
    const output = await retrying.send(new TransactWriteItemsCommand({ TransactItems: [newItem('lost-txn')] }));
    assert.equal(output.$metadata.attempts, 2);
    assert.equal(proxy.forwarded(), 2, 'DynamoDB Local answered both attempts');
    assert.equal(await stored('lost-txn'), true);
  });

  it('DynamoDB Local honours ClientRequestToken: a repeat is answered without evaluating conditions, other items with the same token are refused', async () => {
    assert.ok(direct);
    const token = `token-${Date.now()}`;
    await direct.send(new TransactWriteItemsCommand({ ClientRequestToken: token, TransactItems: [newItem('token-1')] }));
    await direct.send(new TransactWriteItemsCommand({ ClientRequestToken: token, TransactItems: [newItem('token-1')] }));
    await assert.rejects(
      direct.send(new TransactWriteItemsCommand({ ClientRequestToken: token, TransactItems: [newItem('token-2')] })),
      IdempotentParameterMismatchException,
    );
    await assert.rejects(direct.send(new TransactWriteItemsCommand({ TransactItems: [newItem('token-1')] })), TransactionCanceledException, 'a new token evaluates the condition');
  });

  it('lostResponse: a retried conditional PutItem has no token and fails its own condition', async (t) => {
    const { retrying } = await startProxy(t, { rates: { lostResponse: 0.5 }, random: scripted(0) });
    const error = await retrying.send(put('lost-put', 'attribute_not_exists(pk)')).catch((caught: unknown) => caught);
    assert.ok(error instanceof ConditionalCheckFailedException, `expected ConditionalCheckFailedException, got ${String(error)}`);
    assert.equal(error.$metadata.attempts, 2);
    assert.equal(await stored('lost-put'), true, 'the first attempt was applied');
  });

  it('stall: holds a request for stallMs, then forwards it', async (t) => {
    const stallMs = 400;
    const { proxy, once } = await startProxy(t, { rates: { stall: 1 }, stallMs });
    const startedMs = performance.now();
    await once.send(put('stall-1'));
    assert.ok(performance.now() - startedMs >= stallMs - 20, `answered after ${performance.now() - startedMs} ms`);
    assert.equal(await stored('stall-1'), true);
    assert.deepEqual([proxy.injected().stall, proxy.forwarded()], [1, 1]);
  });

  it('stall: a stalled request still lands after its client gave up, as a late packet would', async (t) => {
    const { proxy, once } = await startProxy(t, { rates: { stall: 1 }, stallMs: 500 });
    await assert.rejects(once.send(put('stall-late'), { abortSignal: AbortSignal.timeout(50) }), { name: 'AbortError' });
    assert.equal(await stored('stall-late'), false, 'still held');
    await waitFor('the stalled put to land', () => stored('stall-late'));
    assert.equal(proxy.forwarded(), 1);
  });

  it('holdOf: holds the forwarded requests it chooses for as long as it says (an error answered instead is not held); onAnswered sees each answer on one counter', async (t) => {
    const answered: { operation: string; sentAt: number; answeredAt: number; status: number }[] = [];
    const { once } = await startProxy(t, {
      rates: { internalServerError: 0.5 }, random: scripted(0.1, 0.9, 0.9),
      holdOf: (operation, body) => (JSON.stringify(body).includes('hold-me') ? 400 : 0),
      onAnswered: ({ operation, sentAt, answeredAt, status }) => void answered.push({ operation, sentAt, answeredAt, status }),
    });
    // drawn a fault: answered at once, not held, not forwarded
    await assert.rejects(once.send(put('hold-me-1')), InternalServerError);
    let startedMs = performance.now();
    await once.send(put('hold-me-2'));
    assert.ok(performance.now() - startedMs >= 380, `held: answered after ${performance.now() - startedMs} ms`);
    startedMs = performance.now();
    await once.send(put('hold-not'));
    assert.ok(performance.now() - startedMs < 380, `not held: answered after ${performance.now() - startedMs} ms`);
    assert.deepEqual(answered, [{ operation: 'PutItem', sentAt: 1, answeredAt: 2, status: 200 }, { operation: 'PutItem', sentAt: 3, answeredAt: 4, status: 200 }]);
  });

  it('holdOf: a promise holds the request until it settles', async (t) => {
    let letGo = () => {};
    const gate = new Promise<void>((resolve) => void (letGo = resolve));
    const { once } = await startProxy(t, { holdOf: (_operation, body) => (JSON.stringify(body).includes('gated') ? gate : 0) });
    let landed = false;
    const gated = once.send(put('gated')).then(() => void (landed = true));
    await once.send(put('free'));
    assert.equal(landed, false, 'held while its promise is pending');
    letGo();
    await gated;
    assert.equal(landed, true);
  });

  it('holdAnswerOf: a read it chooses is answered late with what the table held when it was read', async (t) => {
    let held = 0;
    const { once } = await startProxy(t, {
      holdAnswerOf: (operation, body) => (operation === 'GetItem' && JSON.stringify(body).includes('read-late') && held++ === 0 ? 400 : 0),
    });
    const get = (pk: string) => new GetItemCommand({ TableName: TABLE, Key: { pk: { S: pk } }, ConsistentRead: true });
    await once.send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'read-late' }, v: { N: '1' } } }));
    const startedMs = performance.now();
    const late = once.send(get('read-late'));
    // (the write goes through the proxy at once, while the read's answer is held)
    await new Promise((resolve) => setTimeout(resolve, 100));
    await once.send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'read-late' }, v: { N: '2' } } }));
    const { Item } = await late;
    assert.ok(performance.now() - startedMs >= 380, `held: answered after ${performance.now() - startedMs} ms`);
    assert.equal(Item?.v?.N, '1', 'the answer is the read as it was made, before the write');
    const quick = performance.now();
    assert.equal((await once.send(get('read-late'))).Item?.v?.N, '2');
    assert.equal((await once.send(get('read-not'))).Item, undefined);
    assert.ok(performance.now() - quick < 380);
  });

  it('stop() closes everything at once and drops stalled requests unforwarded', async (t) => {
    const { proxy, once } = await startProxy(t, { rates: { stall: 1 }, stallMs: 60_000 });
    const pending = once.send(put('stall-stopped')).then(() => 'answered', (error: unknown) => error);
    await waitFor('the request to be held', () => proxy.injected().stall === 1);
    const startedMs = performance.now();
    await proxy.stop();
    assert.ok(performance.now() - startedMs < 5_000, 'did not wait for the stall');
    assert.ok((await pending) instanceof Error, 'the held request failed');
    assert.equal(proxy.forwarded(), 0);
    assert.equal(await stored('stall-stopped'), false);
    await assert.rejects(fetch(proxy.endpoint, { method: 'POST', body: '{}' }), 'nothing listens any more');
    await proxy.stop();
  });

  it('operations and match narrow the faults, and only eligible requests consume a draw', async (t) => {
    let draws = 0;
    const { proxy, once } = await startProxy(t, {
      rates: { internalServerError: 1 },
      random: () => (draws++, 0),
      operations: ['GetItem'],
      match: (_operation, body) => (body as { Key?: { pk?: { S?: string } } }).Key?.pk?.S === 'fragile',
    });
    const get = (pk: string) => new GetItemCommand({ TableName: TABLE, Key: { pk: { S: pk } } });
    await once.send(put('fragile'));
    await once.send(get('sturdy'));
    await assert.rejects(once.send(get('fragile')), InternalServerError);
    assert.equal(draws, 1);
    assert.equal(proxy.injected('GetItem').internalServerError, 1);
    assert.deepEqual(Object.values(proxy.injected('PutItem')), [0, 0, 0, 0, 0, 0]);
    assert.equal(proxy.forwarded(), 2);
  });

  it('one draw per request falls into the stacked rates, and injected() counts each kind', async (t) => {
    const rates = { provisionedThroughputExceeded: 0.1, throttling: 0.1, internalServerError: 0.1, lostResponse: 0.1, stall: 0.1, transactionConflict: 0.1 };
    const { proxy, once } = await startProxy(t, { rates, stallMs: 50, random: scripted(0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.95) });
    const outcomes: string[] = [];
    for (let index = 0; index < 7; index += 1) {
      outcomes.push(await once.send(put(`stacked-${index}`)).then(() => 'ok', (error: Error) => error.name));
    }
    assert.deepEqual(outcomes, [
      'ProvisionedThroughputExceededException', 'ThrottlingException', 'InternalServerError', 'TimeoutError', 'ok', 'ok', 'ok',
    ]);
    // 0.55 falls on transactionConflict, which a PutItem cannot get: forwarded, not counted.
    assert.deepEqual(proxy.injected(), {
      provisionedThroughputExceeded: 1, throttling: 1, internalServerError: 1, lostResponse: 1, stall: 1, transactionConflict: 0,
    });
    assert.equal(proxy.forwarded(), 4);
    assert.deepEqual(proxy.rates, rates);
  });

  it('an unreachable target is answered 502 InternalServerError, which the SDK retries', async (t) => {
    const proxy = await startDynamoDbFaultProxy({ target: `http://127.0.0.1:${await freePort()}` });
    const once = sdkClient(proxy.endpoint, 1);
    const retrying = sdkClient(proxy.endpoint, 2);
    t.after(async () => {
      once.destroy();
      retrying.destroy();
      await proxy.stop();
    });
    const error = await once.send(put('nowhere')).catch((caught: unknown) => caught);
    assert.ok(error instanceof InternalServerError, `expected InternalServerError, got ${String(error)}`);
    assert.equal(error.$metadata.httpStatusCode, 502);
    assert.match(error.message, /did not answer/);
    const retried = await retrying.send(put('nowhere')).catch((caught: unknown) => caught);
    assert.ok(retried instanceof InternalServerError);
    assert.equal(retried.$metadata.attempts, 2);
    assert.deepEqual([proxy.failed(), proxy.forwarded()], [3, 0]);
  });

  it('transactionConflicts: a write meeting an item of a transaction in progress is refused as the service refuses it', async (t) => {
    assert.ok(dynamodb);
    // GIVEN a transaction held in flight: a second proxy stalls the one on 'held-1' for 1.5 s.
    const stalling = await startDynamoDbFaultProxy({
      target: dynamodb.endpoint, rates: { stall: 1 }, stallMs: 1_500, operations: ['TransactWriteItems'],
      match: (_operation, body) => JSON.stringify(body).includes('held-1'),
    });
    t.after(() => stalling.stop());
    const proxy = await startDynamoDbFaultProxy({ target: stalling.endpoint, transactionConflicts: true });
    const client = sdkClient(proxy.endpoint, 1);
    t.after(async () => {
      client.destroy();
      await proxy.stop();
    });
    const held = client.send(new TransactWriteItemsCommand({ TransactItems: [newItem('held-1'), newItem('held-2')] }));
    await waitFor('the first transaction to be in flight', () => stalling.injected().stall === 1, 5_000);

    // WHEN another transaction names one of its items (as a Put: the key comes from the table's schema)
    const second = await client.send(new TransactWriteItemsCommand({ TransactItems: [newItem('free-1'), newItem('held-2')] }))
      .catch((caught: unknown) => caught);
    // THEN it is cancelled with TransactionConflict on that item only, and nothing of it is applied
    assert.ok(second instanceof TransactionCanceledException, `expected TransactionCanceledException, got ${String(second)}`);
    assert.deepEqual(second.CancellationReasons?.map((reason) => reason.Code), ['None', 'TransactionConflict']);
    assert.equal(await stored('free-1'), false);
    // AND single writes of its items get TransactionConflictException, which the SDK does not retry
    await assert.rejects(client.send(put('held-1')), TransactionConflictException);
    await assert.rejects(client.send(new UpdateItemCommand({
      TableName: TABLE, Key: { pk: { S: 'held-2' } }, UpdateExpression: 'SET n = :one', ExpressionAttributeValues: { ':one': { N: '1' } },
    })), TransactionConflictException);
    // AND other items are not held up
    await client.send(new TransactWriteItemsCommand({ TransactItems: [newItem('free-2')] }));
    await client.send(put('free-3'));

    // WHEN the first transaction is answered, its items are free again
    await held;
    assert.ok((await stored('held-1')) && (await stored('held-2')));
    await client.send(put('held-1'));
    assert.deepEqual(proxy.conflicts(), { TransactWriteItems: 1, PutItem: 1, UpdateItem: 1 });
  });

  it('rejects invalid options and rate changes with a message naming the field', async (t) => {
    const target = dynamodb!.endpoint;
    await assert.rejects(startDynamoDbFaultProxy({ target, rates: { stall: 1.5 } }), { name: 'RangeError', message: /rates\.stall must be a number from 0 to 1; got 1\.5/ });
    await assert.rejects(startDynamoDbFaultProxy({ target, rates: { lostResponse: 0.6, stall: 0.6 } }), { name: 'RangeError', message: /add up to at most 1/ });
    await assert.rejects(startDynamoDbFaultProxy({ target, rates: { lostRespons: 1 } as never }), { name: 'TypeError', message: /rates\.lostRespons is not a fault/ });
    await assert.rejects(startDynamoDbFaultProxy({ target: '127.0.0.1:8000' }), { name: 'TypeError', message: /target must be an http:\/\/host:port URL/ });
    await assert.rejects(startDynamoDbFaultProxy({ target, stallMs: -1 }), { name: 'RangeError', message: /stallMs must be an integer >= 0/ });

    const { proxy } = await startProxy(t, { rates: { throttling: 0.7 } });
    assert.throws(() => (proxy.rates.stall = 0.5), { name: 'RangeError', message: /setting rates\.stall to 0\.5 makes 1\.2/ });
    assert.throws(() => Object.assign(proxy.rates, { bogus: 1 }), TypeError);
    proxy.rates.throttling = 0;
    proxy.rates.stall = 1;
    assert.deepEqual([proxy.rates.throttling, proxy.rates.stall], [0, 1]);
  });
});
