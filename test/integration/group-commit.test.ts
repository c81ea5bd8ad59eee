import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope, type Envelope } from '../../shared/envelope/index.ts';
import { FatalError, REASONS, TransientError } from '../../shared/errors/index.ts';
import { IdempotencyStore, type BusinessWrite } from '../../shared/idempotency/index.ts';
import { useEngines } from '../helpers/engines.ts';
import { createBallastTables } from '../../local/harness/tables.ts';

/** A document client on DynamoDB Local that counts its TransactWriteItems and can cancel one with a conflict. */
function countingClient(options: { conflictOn?: (pk: string) => boolean } = {}) {
  const client = new DynamoDBClient({});
  const sizes: number[] = [];
  /** Each TransactWriteItems sent: the partition keys it wrote, and whether DynamoDB cancelled it. */
  const requests: { pks: string[]; cancelled: boolean }[] = [];
  const inFlight = { now: 0, max: 0 };
  let conflicted = false;
  client.middlewareStack.add((next, context) => async (args) => {
    if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
    const items = (args.input as { TransactItems: Record<string, { Key?: { pk?: { S?: string } } }>[] }).TransactItems;
    sizes.push(items.length);
    const request = { pks: items.map((item) => pkOf(Object.values(item)[0])), cancelled: false };
    requests.push(request);
    inFlight.max = Math.max(inFlight.max, (inFlight.now += 1));
    try {
      return await answer(items, () => next(args));
    } catch (error) {
      request.cancelled = error instanceof TransactionCanceledException;
      throw error;
    } finally {
      inFlight.now -= 1;
    }
  }, { step: 'build', name: 'countTransactions' });
  const answer = async <T>(items: Record<string, { Key?: { pk?: { S?: string } } }>[], send: () => Promise<T>): Promise<T> => {
    const pks = items.map((item) => pkOf(Object.values(item)[0]));
    const index = options.conflictOn ? pks.findIndex(options.conflictOn) : -1;
    if (!conflicted && index >= 0) {
      // As DynamoDB answers while another transaction on that item is in progress: that item
      // TransactionConflict, every other one None, nothing written.
      conflicted = true;
      const reasons = items.map((_, i) => (i === index ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'None' }));
      throw new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: { httpStatusCode: 400 }, CancellationReasons: reasons });
    }
    return send();
  };
  return { documents: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }), sizes, requests, inFlight, destroy: () => client.destroy() };
}

/** The partition key an item of a transaction writes (a Put names it in its Item). */
function pkOf(body: { Key?: { pk?: { S?: string } }; Item?: { pk?: { S?: string } } } | undefined): string {
  return body?.Key?.pk?.S ?? body?.Item?.pk?.S ?? '';
}

describe('idempotency store: group commit', () => {
  const local = useEngines();
  let tables = { state: '', control: '' };
  before(async () => {
    tables = await createBallastTables(local.dynamodb, `group-${randomUUID().slice(0, 8)}`);
  });
  const run = randomUUID().slice(0, 8);
  const job = (name: string, resourceId = `${run}-${name}`): Envelope =>
    createEnvelope({ type: 'counter.add', resourceId, idempotencyKey: `${run}-${name}`, payload: { n: 1 } });
  /** Adds 1 to the job's counter item; with `mustExist`, refused unless the item is already there. */
  const add = (envelope: Envelope, mustExist = false): BusinessWrite => ({
    item: {
      Update: {
        TableName: tables.state, Key: { pk: `counter#${envelope.resourceId}` }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 },
        ...(mustExist ? { ConditionExpression: 'attribute_exists(pk)' } : {}),
      },
    },
    onConditionFailed: () => new FatalError('counter-missing', `counter ${envelope.resourceId} does not exist`),
  });
  const counter = async (envelope: Envelope) =>
    (await local.documents.send(new GetCommand({ TableName: tables.state, Key: { pk: `counter#${envelope.resourceId}` }, ConsistentRead: true }))).Item?.n;
  const commitAll = (store: IdempotencyStore, jobs: readonly Envelope[], write = (envelope: Envelope) => add(envelope)) =>
    Promise.allSettled(jobs.map((envelope) => store.commitOnce(envelope, { writes: [write(envelope)], result: { job: envelope.idempotencyKey } })));

  it('commits started in one turn share one TransactWriteItems, and each job is answered as if alone', async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const jobs = Array.from({ length: 10 }, (_, i) => job(`ten-${i}`));
      // WHEN ten jobs on ten resources commit at once, as the heads of a batch's lanes do
      const outcomes = await commitAll(store, jobs);
      // THEN one request carried all twenty items, every job committed once with its own result
      assert.deepEqual(client.sizes, [20]);
      assert.deepEqual(outcomes.map((o) => o.status === 'fulfilled' && o.value), jobs.map((e) => ({ kind: 'committed', result: { job: e.idempotencyKey } })));
      for (const envelope of jobs) assert.equal(await counter(envelope), 1);
      // AND their duplicates, together, are told so with the stored results, changing nothing
      const again = await commitAll(store, jobs);
      assert.deepEqual(again.map((o) => o.status === 'fulfilled' && o.value), jobs.map((e) => ({ kind: 'duplicate', result: { job: e.idempotencyKey } })));
      for (const envelope of jobs) assert.equal(await counter(envelope), 1);
    } finally {
      client.destroy();
    }
  });

  it('with groupCommits off, every commit has its own transaction', async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control, groupCommits: false });
      await commitAll(store, Array.from({ length: 4 }, (_, i) => job(`alone-${i}`)));
      assert.deepEqual(client.sizes, [2, 2, 2, 2]);
    } finally {
      client.destroy();
    }
  });

  it("a duplicate or a refused business condition is that job's own answer; the innocent jobs of its group commit in the next one", async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const done = job('done');
      await store.commitOnce(done, { writes: [add(done)], result: { job: done.idempotencyKey } });
      client.sizes.length = 0;
      const refused = job('refused');
      const fresh = [job('fresh-1'), job('fresh-2')];
      // WHEN a duplicate, a job whose business write is refused and two fresh jobs commit at once
      const outcomes = await commitAll(store, [done, refused, ...fresh], (envelope) => add(envelope, envelope === refused));
      // THEN the group was cancelled once, and the fresh jobs committed in a second transaction
      assert.deepEqual(client.sizes, [8, 4]);
      const [duplicate, refusal, ...committed] = outcomes;
      assert.deepEqual(duplicate?.status === 'fulfilled' && duplicate.value, { kind: 'duplicate', result: { job: done.idempotencyKey } });
      assert.ok(refusal?.status === 'rejected' && refusal.reason instanceof FatalError && refusal.reason.reason === 'counter-missing', String(refusal?.status));
      assert.deepEqual(committed.map((o) => o.status === 'fulfilled' && o.value.kind), ['committed', 'committed']);
      assert.deepEqual([await counter(done), await counter(refused), await counter(fresh[0] as Envelope), await counter(fresh[1] as Envelope)], [1, undefined, 1, 1]);
      const record = await local.documents.send(new GetCommand({ TableName: tables.control, Key: { pk: `idem#${refused.idempotencyKey}` }, ConsistentRead: true }));
      assert.equal(record.Item, undefined, 'the refused job left no idempotency record');
    } finally {
      client.destroy();
    }
  });

  it('the jobs others wait on in their lanes go in a group of their own: a duplicate among the rest does not cancel them', async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const done = job('lane-done');
      await store.commitOnce(done, { writes: [add(done)], result: null });
      client.requests.length = 0;
      const [fresh, head, second] = [job('lane-fresh'), job('lane-head'), job('lane-second')];
      const commit = (envelope: Envelope, followers: number) => store.commitOnce(envelope, { writes: [add(envelope)], result: null }, { followers });
      // WHEN the heads of two lanes that go on (one and two records wait behind them), a duplicate
      // and a fresh job (nothing waits on either) commit at once
      const outcomes = await Promise.all([commit(done, 0), commit(head, 1), commit(fresh, 0), commit(second, 2)]);
      // THEN the heads shared a transaction of their own: the duplicate cancelled only the group of
      // the lanes that end, the heads committed in their first request, the fresh job in a second
      assert.deepEqual(outcomes.map((o) => o.kind), ['duplicate', 'committed', 'committed', 'committed']);
      const requestsOf = (envelope: Envelope) => client.requests.filter((r) => r.pks.includes(`idem#${envelope.idempotencyKey}`))
        .map((r) => ({ jobs: r.pks.length / 2, cancelled: r.cancelled }));
      assert.deepEqual([requestsOf(head), requestsOf(second)], [[{ jobs: 2, cancelled: false }], [{ jobs: 2, cancelled: false }]]);
      assert.deepEqual(requestsOf(fresh), [{ jobs: 2, cancelled: true }, { jobs: 1, cancelled: false }]);
      for (const envelope of [done, fresh, head, second]) assert.equal(await counter(envelope), 1);
    } finally {
      client.destroy();
    }
  });

  it('a job whose item meets a transaction in progress gets its TransactionConflict; the others commit without waiting for it', async () => {
    const hot = job('hot');
    const client = countingClient({ conflictOn: (pk) => pk === `counter#${hot.resourceId}` });
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const cold = [job('cold-1'), job('cold-2')];
      const [hotOutcome, ...coldOutcomes] = await commitAll(store, [hot, ...cold]);
      assert.ok(hotOutcome?.status === 'rejected' && hotOutcome.reason instanceof TransientError && hotOutcome.reason.reason === REASONS.transactionConflict);
      assert.deepEqual(coldOutcomes.map((o) => o.status === 'fulfilled' && o.value.kind), ['committed', 'committed']);
      assert.deepEqual(client.sizes, [6, 4]);
      assert.deepEqual([await counter(hot), await counter(cold[0] as Envelope)], [undefined, 1]);
    } finally {
      client.destroy();
    }
  });

  it('jobs writing one item, or past 100 items together, go in separate transactions; the later on one item waits for the earlier', async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      // two jobs on one counter (DynamoDB refuses a transaction that writes an item twice)
      const shared = [job('shared-1', `${run}-shared`), job('shared-2', `${run}-shared`)];
      const outcomes = await commitAll(store, shared);
      assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled']);
      assert.deepEqual(client.sizes, [2, 2]);
      assert.equal(client.inFlight.max, 1, 'never two transactions on one item at once (the service would cancel one)');
      assert.equal(await counter(shared[0] as Envelope), 2);
      // 60 jobs of two items each: 100 + 20
      client.sizes.length = 0;
      const many = Array.from({ length: 60 }, (_, i) => job(`many-${i}`));
      assert.ok((await commitAll(store, many)).every((o) => o.status === 'fulfilled'));
      assert.deepEqual(client.sizes, [100, 20]);
    } finally {
      client.destroy();
    }
  });

  it("a job whose items cannot be marshalled, or whose table is missing, fails alone; the others' commits stand", async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const [first, unmarshallable, missing, last] = [job('m-first'), job('m-nan'), job('m-missing'), job('m-last')];
      const write = (envelope: Envelope): BusinessWrite => {
        if (envelope === unmarshallable) return { ...add(envelope), item: { Update: { ...add(envelope).item.Update!, ExpressionAttributeValues: { ':one': Number.NaN } } } };
        if (envelope === missing) return { ...add(envelope), item: { Update: { ...add(envelope).item.Update!, TableName: `${tables.state}-missing` } } };
        return add(envelope);
      };
      const [a, nan, gone, b] = await commitAll(store, [first, unmarshallable, missing, last], write);
      // THEN the NaN never reached DynamoDB; the missing table refused the group, which went job by job
      assert.ok(nan?.status === 'rejected' && /NaN/.test(String(nan.reason)), String(nan?.status));
      assert.ok(gone?.status === 'rejected' && (gone.reason as Error).name === 'ResourceNotFoundException', String(gone?.status === 'rejected' && gone.reason));
      assert.deepEqual([a, b].map((o) => o?.status === 'fulfilled' && o.value.kind), ['committed', 'committed']);
      assert.deepEqual(client.sizes, [6, 2, 2, 2]);
      assert.deepEqual([await counter(first), await counter(last)], [1, 1]);
    } finally {
      client.destroy();
    }
  });

  it('a group DynamoDB refuses as a whole is sent again job by job: only the job at fault fails', async () => {
    const client = countingClient();
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const big = job('big');
      const small = job('small');
      // an item past DynamoDB's 400 KB: a ValidationException for the whole request
      const oversize = (envelope: Envelope): BusinessWrite => envelope === big
        ? { item: { Put: { TableName: tables.state, Item: { pk: `counter#${big.resourceId}`, blob: 'x'.repeat(410_000) } } }, onConditionFailed: () => new FatalError('counter-missing', 'unused') }
        : add(envelope);
      const [bigOutcome, smallOutcome] = await commitAll(store, [big, small], oversize);
      assert.ok(bigOutcome?.status === 'rejected' && (bigOutcome.reason as Error).name === 'ValidationException', String(bigOutcome?.status));
      assert.deepEqual(smallOutcome?.status === 'fulfilled' && smallOutcome.value.kind, 'committed');
      assert.deepEqual(client.sizes, [4, 2, 2]);
      assert.equal(await counter(small), 1);
    } finally {
      client.destroy();
    }
  });
  it('once duplicates are frequent, a batch\'s records are screened in one read: a duplicate is answered from its record and no longer cancels its batch-mates\' group', async () => {
    const client = countingClient();
    const reads: number[] = [];
    client.documents.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand') reads.push(Object.values((args.input as { RequestItems: Record<string, { Keys: unknown[] }> }).RequestItems)[0]?.Keys.length ?? 0);
      return next(args);
    }, { step: 'build', name: 'countReads' });
    try {
      const store = new IdempotencyStore({ documents: client.documents, tableName: tables.control });
      const done = Array.from({ length: 12 }, (_, i) => job(`screen-done-${i}`));
      await commitAll(store, done);
      // GIVEN a sandbox that has met no duplicate yet: screening costs nothing and reads nothing
      assert.equal(await store.screen(done), undefined);
      // WHEN ten duplicates come back (5 % of the 200 commits the share is taken over)
      await commitAll(store, done.slice(0, 10));
      // THEN the next batch's records are read at once, consistently, before its commits
      const fresh = [job('screen-new-0'), job('screen-new-1'), job('screen-new-2')];
      const reused = createEnvelope({ type: 'counter.add', resourceId: done[11]?.resourceId as string, idempotencyKey: done[11]?.idempotencyKey as string, payload: { n: 2 } });
      const batch = [fresh[0], done[10], fresh[1], done[0], reused, fresh[2]] as Envelope[];
      const screened = await store.screen(batch);
      assert.deepEqual(reads, [6]);
      assert.deepEqual([...(screened?.records.keys() ?? [])].sort(), [done[0], done[10], done[11]].map((e) => e?.idempotencyKey).sort());
      // AND committing the batch with it: the duplicates are answered from their records, the
      // reused key refused, and the new jobs share one transaction that nothing cancels
      const before = client.requests.length;
      const outcomes = await Promise.allSettled(batch.map((envelope) => store.commitOnce(envelope, { writes: [add(envelope)], result: { job: envelope.idempotencyKey } }, { screened })));
      assert.deepEqual(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.kind : (o.reason as Error).name)),
        ['committed', 'duplicate', 'committed', 'duplicate', 'IdempotencyKeyReusedError', 'committed']);
      assert.deepEqual((outcomes[1] as PromiseFulfilledResult<{ result: unknown }>).value.result, { job: done[10]?.idempotencyKey });
      assert.deepEqual(client.requests.slice(before).map((r) => [r.pks.filter((pk) => pk.startsWith('idem#')).length, r.cancelled]), [[3, false]]);
      for (const envelope of [...fresh, ...done]) assert.equal(await counter(envelope as Envelope), 1);
    } finally {
      client.destroy();
    }
  });

  it('a screen whose read fails throws what DynamoDB answered (the worker logs it, and its commits find their duplicates themselves)', async () => {
    const store = new IdempotencyStore({ documents: local.documents, tableName: `${tables.control}-missing`, screenAboveDuplicateShare: 0 });
    await assert.rejects(store.screen([job('screen-missing')]), { name: 'ResourceNotFoundException' });
    assert.throws(() => new IdempotencyStore({ documents: local.documents, tableName: tables.control, screenAboveDuplicateShare: 1.5 }), /screenAboveDuplicateShare must be within 0\.\.1, got 1\.5/);
  });
});
