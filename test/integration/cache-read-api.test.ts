import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { CACHE_ID_RULE, defineEntity } from '../../shared/cache/index.ts';
import { accountEntity } from '../../workloads/accounts/index.ts';
import { captureOutput } from '../helpers/output.ts';
import { useCacheFixture } from '../helpers/cache-fixture.ts';

/** A Function URL event (payload 2.0) with the fields the read API looks at. */
function request(rawPath: string, method = 'GET'): APIGatewayProxyEventV2 {
  return { version: '2.0', rawPath, rawQueryString: '', headers: {}, isBase64Encoded: false, routeKey: '$default', requestContext: { http: { method }, requestId: 'req-1' } } as unknown as APIGatewayProxyEventV2;
}

const body = (response: { body?: string }) => JSON.parse(response.body ?? 'null') as Record<string, unknown>;

describe('read API: GET /accounts/{id}', () => {
  const f = useCacheFixture();

  it('200 with the account; x-cache is miss, then hit', async () => {
    const api = f.readApi(f.cache());
    const item = await f.createAccount('acc-api', 250, { name: 'Ada' });
    const first = await api(request('/accounts/acc-api'));
    assert.equal(first.statusCode, 200);
    assert.equal(first.headers?.['x-cache'], 'miss');
    assert.equal(first.headers?.['x-cache-schema'], '1', 'the cache schema version this code reads');
    assert.equal(first.headers?.['content-type'], 'application/json');
    assert.deepEqual(body(first), { accountId: 'acc-api', balance: 250, version: 1, profile: { name: 'Ada' }, updatedAt: item.updatedAt });
    const second = await api(request('/accounts/acc-api'));
    assert.equal(second.headers?.['x-cache'], 'hit');
    assert.deepEqual(body(second), body(first));
  });

  it('404 for an unknown account and for other paths', async () => {
    const api = f.readApi(f.cache());
    const unknown = await api(request('/accounts/acc-nobody'));
    assert.deepEqual([unknown.statusCode, body(unknown).message], [404, "account 'acc-nobody' not found"]);
    for (const path of ['/', '/account/acc-api', '/accounts', '/accounts/', '/accounts/acc-api/extra']) {
      assert.equal((await api(request(path))).statusCode, 404, path);
    }
  });

  it('400 for malformed ids, saying what a valid id looks like', async () => {
    const api = f.readApi(f.cache());
    for (const path of ['/accounts/a%7Bb%7D', '/accounts/bad%20id', '/accounts/%E0%A4%A', `/accounts/${'x'.repeat(129)}`, '/accounts/-lead']) {
      const response = await api(request(path));
      assert.equal(response.statusCode, 400, path);
      assert.equal(body(response).message, `malformed account id: ${CACHE_ID_RULE}`);
    }
  });

  it('405 for other methods, with Allow: GET', async () => {
    const api = f.readApi(f.cache());
    for (const method of ['POST', 'PUT', 'DELETE', 'HEAD']) {
      const response = await api(request('/accounts/acc-api', method));
      assert.deepEqual([response.statusCode, response.headers?.allow], [405, 'GET'], method);
    }
  });

  it('500 with a generic body: internal errors are logged, never returned', async () => {
    const api = f.readApi(f.cache({ tableName: 'no-such-table' }));
    const { value: response, output } = await captureOutput(() => api(request('/accounts/acc-uncached')));
    assert.deepEqual([response.statusCode, body(response)], [500, { message: 'internal error' }]);
    assert.doesNotMatch(response.body ?? '', /no-such-table|ResourceNotFound/);
    assert.ok(output.logs.some((log) => log.level === 'ERROR' && JSON.stringify(log).includes('ResourceNotFound')));
  });

  it('serves every cached entity that declares a route, and only those', async () => {
    const order = defineEntity({ name: 'order', schemaVersion: 1, route: 'orders', schema: z.object({ orderId: z.string(), version: z.number().int() }) });
    const note = defineEntity({ name: 'note', schemaVersion: 1, schema: z.object({ version: z.number().int() }) });
    const api = f.readApi(f.cache({ entities: [accountEntity, order, note] }));
    await f.local.documents.send(new PutCommand({ TableName: f.stateTable, Item: { pk: 'order#o-1', orderId: 'o-1', version: 3, secret: 'x' } }));
    await f.local.documents.send(new PutCommand({ TableName: f.stateTable, Item: { pk: 'note#n-1', version: 1 } }));
    const read = await api(request('/orders/o-1'));
    assert.deepEqual([read.statusCode, read.headers?.['x-cache'], body(read)], [200, 'miss', { orderId: 'o-1', version: 3 }], 'the projection, not the item');
    assert.equal((await api(request('/orders/o-1'))).headers?.['x-cache'], 'hit');
    assert.deepEqual(body(await api(request('/orders/o-2'))), { message: "order 'o-2' not found" });
    assert.equal(body(await api(request('/orders/a%7Bb'))).message, `malformed order id: ${CACHE_ID_RULE}`);
    assert.equal((await api(request('/note/n-1'))).statusCode, 404, 'no route, not served');
    assert.equal((await api(request('/notes/n-1'))).statusCode, 404);
  });
});
