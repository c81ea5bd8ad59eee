import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { FencedError, LockBusyError } from '../../shared/errors/index.ts';
import { IdempotencyStore, type Claim, type ClaimOutcome } from '../../shared/idempotency/index.ts';
import { useEngines } from '../helpers/engines.ts';
import { createBallastTables } from '../../local/harness/tables.ts';

describe('idempotency store: a claim over several resources', () => {
  const local = useEngines();
  let control = '';
  before(async () => {
    control = (await createBallastTables(local.dynamodb, `locks-${randomUUID().slice(0, 8)}`)).control;
  });
  const store = () => new IdempotencyStore({ documents: local.documents, tableName: control, leaseMs: 30_000 });
  const job = (resourceId: string, key: string) => createEnvelope({ type: 'order.ship', resourceId, idempotencyKey: key, payload: {} });
  const lock = async (id: string) => (await local.documents.send(new GetCommand({ TableName: control, Key: { pk: `lock#${id}` }, ConsistentRead: true }))).Item;
  const claimed = (outcome: ClaimOutcome): Claim => {
    assert.equal(outcome.kind, 'claimed');
    return (outcome as { claim: Claim }).claim;
  };

  it('locks every resource, in key order, with one owner token and one fence; a job sharing one waits', async () => {
    const first = claimed(await store().claim({ ...job('m-b', 'multi-1'), resources: ['m-c', 'm-a'] }));
    assert.deepEqual(first.resourceIds, ['m-a', 'm-b', 'm-c']);
    for (const id of first.resourceIds) {
      const item = await lock(id);
      assert.deepEqual([item?.ownerToken, item?.fence], [first.ownerToken, first.fence], id);
    }
    // a job on another set that shares m-c cannot take any of its locks
    await assert.rejects(store().claim({ ...job('m-d', 'multi-2'), resources: ['m-c'] }), (error: unknown) =>
      error instanceof LockBusyError && /resource m-c is locked/.test(error.message));
    assert.equal((await lock('m-d'))?.ownerToken, undefined, 'all or nothing: m-d was not taken either');
    // the commit releases every lock; the waiting job then gets all of its own
    await store().commitClaimed(first, { writes: [], result: { ok: true } });
    for (const id of first.resourceIds) assert.equal((await lock(id))?.ownerToken, undefined, id);
    const second = claimed(await store().claim({ ...job('m-d', 'multi-2'), resources: ['m-c'] }));
    assert.ok(second.fence > 0);
    await store().abandon(second);
    assert.deepEqual([(await lock('m-c'))?.ownerToken, (await lock('m-d'))?.ownerToken], [undefined, undefined], 'abandon gives all of them back');
  });

  it('takes over expired locks with a fence above the highest one seen, on every resource', async () => {
    const ahead = Date.now() + 3_600_000; // a holder whose clock ran an hour ahead, long gone
    await local.documents.send(new PutCommand({ TableName: control, Item: { pk: 'lock#s-b', ownerToken: 'gone', fence: ahead, leaseUntilMs: Date.now() - 1_000, expiresAtEpochSeconds: 0 } }));
    const claim = claimed(await store().claim({ ...job('s-a', 'stale-1'), resources: ['s-b'] }));
    assert.ok(claim.fence > ahead, 'the external API sees a fence no earlier holder had');
    assert.deepEqual([(await lock('s-a'))?.fence, (await lock('s-b'))?.fence], [claim.fence, claim.fence]);
    const extended = await store().extend(claim);
    assert.deepEqual([(await lock('s-a'))?.leaseUntilMs, (await lock('s-b'))?.leaseUntilMs], [extended.leaseUntilMs, extended.leaseUntilMs]);
  });

  it('a commit is fenced when any one of its locks was taken over', async () => {
    const claim = claimed(await store().claim({ ...job('f-a', 'fenced-1'), resources: ['f-b'] }));
    await local.documents.send(new PutCommand({ TableName: control, Item: { pk: 'lock#f-b', ownerToken: 'taker', fence: claim.fence + 1, leaseUntilMs: Date.now() + 30_000, expiresAtEpochSeconds: 0 } }));
    await assert.rejects(store().commitClaimed(claim, { writes: [] }), FencedError);
    assert.equal((await lock('f-a'))?.ownerToken, claim.ownerToken, 'nothing was released: the commit changed nothing');
  });
});

describe('idempotency store: the document client it is given', () => {
  const local = useEngines();

  it("commits after the client's document commands have run: lib-dynamodb's marshall options do not wrap the store's items in { M }", async () => {
    // GIVEN a document client configured as the worker configures it, which has already sent a
    // document command (lib-dynamodb then sets convertTopLevelContainer on its marshall options)
    const { control } = await createBallastTables(local.dynamodb, `docs-${randomUUID().slice(0, 8)}`);
    const documents = DynamoDBDocumentClient.from(local.dynamodb, { marshallOptions: { removeUndefinedValues: true } });
    await documents.send(new GetCommand({ TableName: control, Key: { pk: 'nothing' } }));
    const store = new IdempotencyStore({ documents, tableName: control });
    const envelope = createEnvelope({ type: 'order.ship', resourceId: 'doc-1', idempotencyKey: 'doc-key-1', payload: { n: 1 } });
    // WHEN a job commits with a business write, then its duplicate arrives
    const write = { item: { Put: { TableName: control, Item: { pk: 'business#doc-1', n: 1, absent: undefined } } }, onConditionFailed: () => new FencedError('unused') };
    const first = await store.commitOnce(envelope, { writes: [write], result: { shipped: true } });
    const again = await store.commitOnce(envelope, { writes: [write], result: { shipped: true } });
    // THEN both items were written as attributes, and the duplicate reads the stored result back
    assert.deepEqual([first.kind, again], ['committed', { kind: 'duplicate', result: { shipped: true } }]);
    const record = (await documents.send(new GetCommand({ TableName: control, Key: { pk: 'idem#doc-key-1' }, ConsistentRead: true }))).Item;
    assert.deepEqual([record?.status, record?.result], ['COMPLETED', { shipped: true }]);
    assert.deepEqual((await documents.send(new GetCommand({ TableName: control, Key: { pk: 'business#doc-1' } }))).Item, { pk: 'business#doc-1', n: 1 });
  });
});
