/**
 * The fault paths the combined chaos run found, each on the real engines: a hostile record, a
 * claimed commit cancelled by a conflict, limits DynamoDB refuses, a partner answering nonsense,
 * and a payload field only a newer worker knows.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import * as mini from 'zod/mini';
import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ACCOUNT_REASONS, BALANCE_CHANGE, JOB_TYPES, accountKey } from '../../workloads/accounts/index.ts';
import { REASONS } from '../../shared/errors/index.ts';
import type { Envelope } from '../../shared/envelope/index.ts';
import { lockKey } from '../../shared/lock/index.ts';
import type { ExternalJob, TransactionalJob } from '../../shared/batch/index.ts';
import { creditJob } from '../../workloads/accounts/jobs/index.ts';
import { captureOutput, metricTotal } from '../helpers/output.ts';
import { useWorkerHarness } from '../helpers/worker-harness.ts';
import { toDeadLetter } from '../../shared/operations/dlq-messages.ts';
import { checkReplay, REPLAY_DECISIONS } from '../../shared/operations/replay-check.ts';
import { toCachedAccount } from '../../workloads/accounts/index.ts';
import { JOB_CATALOG } from '../fixtures/workloads/registry.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type TransactItemInput = {
  Put?: { Item?: { status?: { S?: string } } }; Update?: { UpdateExpression?: string }; Delete?: { Key?: { pk?: { S?: string } } };
};

/**
 * A document client whose first transaction matching `isTarget` is cancelled by a conflict on
 * item `conflictIndex`, with the error shape DynamoDB gives one (another transaction committing
 * on that item at that moment).
 */
function conflictOnce(isTarget: (items: readonly TransactItemInput[]) => boolean, conflictIndex: number, times = 1) {
  const client = new DynamoDBClient({});
  let conflicts = 0;
  client.middlewareStack.add((next) => async (args) => {
    const items = (args.input as { TransactItems?: TransactItemInput[] }).TransactItems ?? [];
    if (conflicts < times && isTarget(items)) {
      conflicts += 1;
      const reasons = items.map((_, i) => (i === conflictIndex ? 'TransactionConflict' : 'None'));
      throw new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.join(', ')}]`,
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: reasons.map((code) => (code === 'None' ? { Code: code } : { Code: code, Message: 'Transaction is ongoing for the item' })),
      });
    }
    return next(args);
  }, { step: 'build', name: 'conflictOnce' });
  return {
    documents: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
    conflicts: () => conflicts,
    destroy: () => client.destroy(),
  };
}

describe('worker fault paths on DynamoDB Local + fauxqs', () => {
  const h = useWorkerHarness();

  it('a payload nested 90,000 levels deep in a batch of 10: dead-lettered with its reason on the first receive, nine credits applied, no throw', async () => {
    const queues = await h.queues();
    for (let i = 0; i < 9; i += 1) await h.send(queues, h.envelope({ resourceId: `acc-deep-${i}`, payload: { amount: 10 } }));
    const deep = `${'{"a":'.repeat(90_000)}1${'}'.repeat(90_000)}`;
    const poison = JSON.stringify({ ...h.envelope({ resourceId: 'acc-deep-x' }), payload: '__P__' }).replace('"__P__"', `{"amount":1,"x":${deep}}`);
    await h.send(queues, poison);
    // WHEN the worker drains the queue (a thrown invocation would reject here)
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    // THEN one dead letter, reason invalid-envelope, attempt 1; every good credit applied
    const dead = await h.deadLetters(queues);
    assert.equal(dead.length, 1);
    assert.equal(dead[0]?.reason, REASONS.invalidEnvelope);
    assert.equal(dead[0]?.attributes?.['ballast.attempt']?.StringValue, '1');
    for (let i = 0; i < 9; i += 1) assert.equal((await h.account(`acc-deep-${i}`))?.balance, 10);
  });

  it('a sync whose commit meets a TransactionConflict calls the partner exactly once: the commit is retried in place, the claim kept', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 2 });
    const accountId = 'acc-conflict';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 5 } }));
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    // GIVEN a DynamoDB client whose first claimed commit is cancelled by a conflicting transaction,
    // exactly as DynamoDB reports one (a credit on the same account committing at that moment)
    const failing = conflictOnce((items) => items[0]?.Update?.UpdateExpression?.startsWith('SET #status = :completed') === true, 2);
    const requestsBefore = h.partner.requests();
    try {
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));
      // WHEN the sync runs (and the queue drains, redeliveries included)
      await captureOutput(() => h.drain(queues, h.worker(queues, { documents: failing.documents })));
    } finally {
      failing.destroy();
    }
    // THEN the conflict happened, the partner was called once, the job committed once
    assert.equal(failing.conflicts(), 1);
    assert.equal(h.partner.requests() - requestsBefore, 1, 'no second partner call');
    const account = await h.account(accountId);
    assert.equal(account?.version, 2, 'one credit + one sync');
    assert.ok(account?.profile);
    const lock = await h.local.documents.send(new GetCommand({ TableName: h.tables.control, Key: { pk: lockKey(accountId) }, ConsistentRead: true }));
    assert.equal(lock.Item?.ownerToken, undefined, 'the lock was released by the commit');
    assert.deepEqual(await h.deadLetters(queues), []);
  });

  it('a credit whose one-shot commit meets a TransactionConflict is committed in place, on its first receive', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 30 });
    const accountId = 'acc-credit-conflict';
    // GIVEN a client whose first one-shot commit (a COMPLETED record Put) is cancelled by a conflict
    // on the account item, as DynamoDB cancels it while another transaction on that account is in progress
    const failing = conflictOnce((items) => items[0]?.Put?.Item?.status?.S === 'COMPLETED', 1);
    let captured;
    try {
      await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 7 } }));
      // WHEN the worker takes the batch once
      captured = await captureOutput(() => h.drain(queues, h.worker(queues, { documents: failing.documents }), { maxRounds: 2 }));
    } finally {
      failing.destroy();
    }
    // THEN the conflict happened, yet the credit committed once in the same invocation: not handed
    // back to SQS to wait out a backoff of seconds for a conflict that lasts milliseconds
    assert.equal(failing.conflicts(), 1);
    assert.equal((await h.account(accountId))?.balance, 7);
    assert.equal(metricTotal(captured.output, 'JobsRetried'), 0);
    assert.equal(metricTotal(captured.output, 'JobsProcessed'), 1);
    // (counted, not logged: a conflict is routine contention on a hot item, and a line each would
    // cost more than the retry)
    assert.equal(metricTotal(captured.output, 'CommitConflicts'), 1);
    assert.equal(captured.output.logs.find((log) => log.message === 'commit failed; retrying in place'), undefined);
  });

  it('a role without BatchGetItem on the control table: once duplicates are frequent the screening read is refused, logged as a warning, and the batch still settles every record', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 30 });
    // GIVEN a client on which DynamoDB refuses BatchGetItem, as it would a role missing the action
    const client = new DynamoDBClient({});
    let refusedReads = 0;
    client.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName !== 'BatchGetItemCommand') return next(args);
      refusedReads += 1;
      throw Object.assign(new Error('User is not authorized to perform: dynamodb:BatchGetItem'), { name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    }, { step: 'build', name: 'denyBatchGet' });
    const worker = h.worker(queues, { documents: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }) });
    const credits = Array.from({ length: 12 }, (_, i) => h.envelope({ resourceId: `acc-screen-${i}`, payload: { amount: 1 } }));
    let captured;
    let readsBefore = 0;
    try {
      // AND a worker that committed 12 credits, then met all 12 again (12 duplicates in its last 24 commits: 6 % of its window)
      for (const envelope of credits) await h.send(queues, envelope);
      await captureOutput(() => h.drain(queues, worker));
      for (const envelope of credits) await h.send(queues, envelope);
      await captureOutput(() => h.drain(queues, worker));
      readsBefore = refusedReads;
      // WHEN its next batch holds two more duplicates and a new credit
      const fresh = h.envelope({ resourceId: 'acc-screen-new', payload: { amount: 5 } });
      for (const envelope of [credits[0], fresh, credits[1]] as Envelope[]) await h.send(queues, envelope);
      captured = await captureOutput(() => h.drain(queues, worker));
    } finally {
      client.destroy();
    }
    // THEN the read was tried and refused, and said so at WARN
    assert.ok(refusedReads > readsBefore);
    assert.ok(captured.output.logs.some((log) => log.level === 'WARN' && /screening the batch's idempotency records failed/.test(String(log.message))), JSON.stringify(captured.output.logs));
    // AND the commits found the duplicates themselves: nothing applied twice, the new credit once
    assert.equal(metricTotal(captured.output, 'DuplicatesSuppressed'), 2);
    assert.equal(metricTotal(captured.output, 'JobsProcessed'), 1);
    for (let i = 0; i < 12; i += 1) assert.equal((await h.account(`acc-screen-${i}`))?.balance, 1);
    assert.equal((await h.account('acc-screen-new'))?.balance, 5);
    assert.deepEqual(await h.deadLetters(queues), []);
  });

  it('a claim given back after a refused sync survives a TransactionConflict on the way: no claim or lock is left past its lease', async () => {
    const queues = await h.queues();
    const accountId = 'acc-abandon-conflict';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 5 } }));
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    // GIVEN a client whose first abandon transaction is cancelled by a conflict, and a partner that answers nonsense
    const failing = conflictOnce((items) => items[0]?.Delete?.Key?.pk?.S?.startsWith('idem#') === true, 0);
    h.partner.answerNext(accountId, 1, '["not a profile"]');
    try {
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));
      // WHEN the sync is refused and its claim given back
      await captureOutput(() => h.drain(queues, h.worker(queues, { documents: failing.documents })));
    } finally {
      failing.destroy();
    }
    // THEN it is dead-lettered, and neither its record nor the account's lock is still held
    assert.equal(failing.conflicts(), 1);
    assert.deepEqual((await h.deadLetters(queues)).map((d) => d.reason), [ACCOUNT_REASONS.partnerRejected]);
    const control = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    const held = (control.Items ?? []).filter((item) => String(item.pk).endsWith(accountId) || item.jobType === JOB_TYPES.syncProfile)
      .filter((item) => item.status === 'IN_PROGRESS' || item.ownerToken !== undefined);
    assert.deepEqual(held, []);
  });

  it('a refused sync whose claim cannot be given back is retried, not dead-lettered holding it; given back on a later receive, it is dead-lettered and nothing is left held', async () => {
    const queues = await h.queues();
    const accountId = 'acc-abandon-refused';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 5 } }));
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    // GIVEN a client that cancels every abandon (a conflict each time, past the retries in place), and a partner that answers nonsense twice
    const failing = conflictOnce((items) => items[0]?.Delete?.Key?.pk?.S?.startsWith('idem#') === true, 0, Number.POSITIVE_INFINITY);
    h.partner.answerNext(accountId, 2, '["not a profile"]');
    const leaseMs = 600;
    try {
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));
      // WHEN the sync is refused and its claim cannot be given back
      const { value: first, output } = await captureOutput(() => h.deliver(queues, h.worker(queues, { documents: failing.documents, config: { leaseMs } })));
      // THEN it is left for a later receive (its claim held until its lease ends) with its verdict as the reason, and nothing is in the DLQ
      assert.ok(failing.conflicts() > 1);
      assert.equal(first.failed.size, 1);
      const retried = output.logs.find((log) => log.message === 'job will be retried');
      assert.deepEqual([retried?.reason, (retried as { abandonFailure?: string } | undefined)?.abandonFailure], [ACCOUNT_REASONS.partnerRejected, REASONS.transactionConflict], JSON.stringify(output.logs));
      assert.deepEqual(await h.deadLetters(queues), []);
    } finally {
      failing.destroy();
    }
    // WHEN it comes back to a worker that can give the claim back (its lease ended meanwhile)
    await captureOutput(() => h.drain(queues, h.worker(queues, { config: { leaseMs } })));
    // THEN it is dead-lettered with its verdict, and neither its record nor the account's lock is still held
    assert.deepEqual((await h.deadLetters(queues)).map((d) => d.reason), [ACCOUNT_REASONS.partnerRejected]);
    const control = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    const held = (control.Items ?? []).filter((item) => String(item.pk).endsWith(accountId) || item.jobType === JOB_TYPES.syncProfile)
      .filter((item) => item.status === 'IN_PROGRESS' || item.ownerToken !== undefined);
    assert.deepEqual(held, []);
  });

  it('on its last receive, a refused sync whose claim cannot be given back is requeued, not dead-lettered holding it; the copy gives it back and is dead-lettered', async () => {
    const queues = await h.queues({ maxReceiveCount: 1 });
    const accountId = 'acc-abandon-last';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 5 } }));
    await captureOutput(() => h.drain(queues, h.worker(queues, { config: { maxReceiveCount: 1 } })));
    // GIVEN a client that cancels every abandon, a partner that answers nonsense twice, and a queue whose first receive is its last
    const failing = conflictOnce((items) => items[0]?.Delete?.Key?.pk?.S?.startsWith('idem#') === true, 0, Number.POSITIVE_INFINITY);
    h.partner.answerNext(accountId, 2, '["not a profile"]');
    const config = { leaseMs: 600, maxReceiveCount: 1 };
    try {
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));
      // WHEN the sync is refused on its last receive and its claim cannot be given back
      const { value: first, output } = await captureOutput(() => h.deliver(queues, h.worker(queues, { documents: failing.documents, config })));
      // THEN it is sent to its queue again, delayed past its lease, with its verdict as the reason; nothing is in the DLQ
      assert.ok(failing.conflicts() > 1);
      assert.equal(first.failed.size, 0);
      const requeued = output.logs.find((log) => /^job requeued/.test(String(log.message)));
      assert.deepEqual([requeued?.reason, (requeued as { abandonFailure?: string } | undefined)?.abandonFailure], [ACCOUNT_REASONS.partnerRejected, REASONS.transactionConflict], JSON.stringify(output.logs));
      // (counted as a retry with its verdict's reason, not as a lock wait)
      assert.deepEqual([metricTotal(output, 'JobsRetried'), metricTotal(output, 'LockWaitRequeues'), metricTotal(output, 'LockWaitMs')], [1, 0, 0]);
      assert.deepEqual(await h.deadLetters(queues), []);
    } finally {
      failing.destroy();
    }
    // WHEN the copy comes back to a worker that can give the claim back
    await captureOutput(() => h.drain(queues, h.worker(queues, { config })));
    // THEN it is dead-lettered with its verdict, and neither its record nor the account's lock is still held
    assert.deepEqual((await h.deadLetters(queues)).map((d) => d.reason), [ACCOUNT_REASONS.partnerRejected]);
    const control = await h.local.documents.send(new ScanCommand({ TableName: h.tables.control, ConsistentRead: true }));
    const held = (control.Items ?? []).filter((item) => String(item.pk).endsWith(accountId) || item.jobType === JOB_TYPES.syncProfile)
      .filter((item) => item.status === 'IN_PROGRESS' || item.ownerToken !== undefined);
    assert.deepEqual(held, []);
  });

  it('limits DynamoDB refuses (item over 400 KB, over 100 items, one item twice) are fatal at once with a precise reason; the external effect ran once', async () => {
    const queues = await h.queues();
    let performed = 0;
    const oversize: ExternalJob<Record<string, unknown>> = {
      type: 'test.oversize', payload: z.object({}), effects: 'external',
      async perform({ envelope }) {
        performed += 1;
        return { writes: [{ item: { Put: { TableName: h.tables.state, Item: { pk: accountKey(envelope.resourceId), blob: 'x'.repeat(410_000), version: 1 } } }, onConditionFailed: () => { throw new Error('no condition'); } }] };
      },
    };
    const write = (key: string) => ({ item: { Put: { TableName: h.tables.state, Item: { pk: key, version: 1 } } }, onConditionFailed: () => { throw new Error('no condition'); } });
    const tooMany: TransactionalJob<Record<string, unknown>> = {
      type: 'test.too-many', payload: z.object({}), effects: 'dynamodb',
      plan: ({ envelope }) => ({ writes: Array.from({ length: 100 }, (_, i) => write(`${envelope.resourceId}#${i}`)) }),
    };
    const twice: TransactionalJob<Record<string, unknown>> = {
      type: 'test.twice', payload: z.object({}), effects: 'dynamodb',
      plan: ({ envelope }) => ({ writes: [write(envelope.resourceId), write(envelope.resourceId)] }),
    };
    const worker = h.worker(queues, { jobs: [oversize, tooMany, twice] });
    for (const type of ['test.oversize', 'test.too-many', 'test.twice']) await h.send(queues, h.envelope({ type, resourceId: `acc-${type}`, payload: {} }));
    // WHEN the queue drains
    await captureOutput(() => h.drain(queues, worker));
    // THEN each is dead-lettered on its first receive with the limit it broke; the partner-side effect ran once
    const dead = await h.deadLetters(queues);
    const byType = new Map(dead.map((d) => [(JSON.parse(d.body) as { type: string }).type, d]));
    assert.equal(byType.get('test.oversize')?.reason, REASONS.itemTooLarge);
    assert.equal(byType.get('test.too-many')?.reason, REASONS.transactionTooLarge);
    assert.equal(byType.get('test.twice')?.reason, REASONS.transactionItemRepeated);
    for (const d of dead) assert.equal(d.attributes?.['ballast.attempt']?.StringValue, '1');
    assert.equal(performed, 1);
  });

  it('a partner answering 200 with a JSON array or string: partner-rejected, and the account stays readable', async () => {
    const queues = await h.queues();
    const accountId = 'acc-nonsense';
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 7 } }));
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    for (const body of ['[1,2,3]', '"a string"', 'not json']) {
      h.partner.answerNext(accountId, 1, body);
      await h.send(queues, h.envelope({ type: JOB_TYPES.syncProfile, resourceId: accountId, payload: {} }));
      await captureOutput(() => h.drain(queues, h.worker(queues)));
    }
    const dead = await h.deadLetters(queues);
    assert.deepEqual(dead.map((d) => d.reason), [ACCOUNT_REASONS.partnerRejected, ACCOUNT_REASONS.partnerRejected, ACCOUNT_REASONS.partnerRejected]);
    const item = await h.account(accountId);
    assert.equal(item?.version, 1, 'nothing was stored');
    assert.doesNotThrow(() => toCachedAccount(item as object));
  });

  it('a payload field only v2 knows hashes the same in v1 and v2: a v1-committed message redelivered to v2 is a duplicate, not a reused key', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 1 });
    const v1 = h.worker(queues);
    // v2 adds an optional field and a defaulted one to the credit's payload
    const v1Credit = creditJob({ stateTableName: h.tables.state });
    const v2Credit = { ...v1Credit, payload: mini.extend(BALANCE_CHANGE, { note: mini.optional(mini.string()), currency: mini._default(mini.string(), 'EUR') }) } as typeof v1Credit;
    const v2 = h.worker(queues, { jobs: [v2Credit] });
    const accountId = 'acc-rollout';
    // GIVEN a v1.1 producer's credit carrying the new field; v1 commits it and dies before deleting it
    await h.send(queues, h.envelope({ resourceId: accountId, payload: { amount: 30, note: 'from the v2 producer' } }));
    await captureOutput(() => h.deliver(queues, v1, { crashAfterHandler: true }));
    await sleep(1_100);
    // WHEN it is redelivered to v2
    await captureOutput(() => h.drain(queues, v2));
    // THEN v2 sees the job it already did: applied once, nothing dead-lettered
    assert.deepEqual(await h.deadLetters(queues), []);
    assert.equal((await h.account(accountId))?.balance, 30);
  });
});

describe('replay re-check hashes what the worker hashes', () => {
  const h = useWorkerHarness();

  it('a completed job whose message carries a field its schema does not know is a duplicate for replay, not a reused key', async () => {
    const queues = await h.queues();
    const envelope = h.envelope({ resourceId: 'acc-replay-hash', payload: { amount: 3, note: 'only a newer schema knows me' } });
    await h.send(queues, envelope);
    await captureOutput(() => h.drain(queues, h.worker(queues)));
    const letter = toDeadLetter({ MessageId: 'm-1', Body: JSON.stringify(envelope), MessageAttributes: {} });
    const check = await checkReplay(letter, h.local.documents, h.tables.control, Date.now(), JOB_CATALOG);
    assert.equal(check.decision, REPLAY_DECISIONS.duplicate, check.detail);
  });
});
