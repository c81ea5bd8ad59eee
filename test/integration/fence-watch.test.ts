import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { FencedError } from '../../shared/errors/index.ts';
import { IdempotencyStore, type Claim, type ClaimOutcome } from '../../shared/idempotency/index.ts';
import { acquireLockItem, releaseLockItem } from '../../shared/lock/index.ts';
import { localClientConfig, startDynamoDb, type Engine } from '../../local/engines/index.ts';
import { fenceWatch, startDynamoDbFaultProxy, type DynamoDbFaultProxy, type FenceWatch } from '../../local/faults/index.ts';
import { createBallastTables } from '../../local/harness/tables.ts';

const LEASE_MS = 300;

describe('fence watch: lock writes on the wire, ordered as DynamoDB applied them', () => {
  let dynamodb: Engine | undefined;
  let control = '';
  let watch: FenceWatch;
  let proxy: DynamoDbFaultProxy | undefined;
  let client: DynamoDBClient | undefined;
  let documents: DynamoDBDocumentClient;
  // The next TransactWriteItems to reach the proxy is held past the lease, once.
  let stallNext = false;

  before(async () => {
    dynamodb = await startDynamoDb();
    const direct = new DynamoDBClient(localClientConfig(dynamodb.endpoint));
    try {
      control = (await createBallastTables(direct, 'fences')).control;
    } finally {
      direct.destroy();
    }
    watch = fenceWatch();
    proxy = await startDynamoDbFaultProxy({
      target: dynamodb.endpoint, stallMs: 4 * LEASE_MS, rates: { stall: 1 }, onAnswered: watch.observe,
      match: (operation) => {
        if (operation !== 'TransactWriteItems' || !stallNext) return false;
        stallNext = false;
        return true;
      },
    });
    client = new DynamoDBClient(localClientConfig(proxy.endpoint));
    documents = DynamoDBDocumentClient.from(client);
  });
  after(async () => {
    client?.destroy();
    await proxy?.stop();
    await dynamodb?.stop();
  });

  const store = () => new IdempotencyStore({ documents, tableName: control, leaseMs: LEASE_MS, groupCommits: false });
  const claimed = (outcome: ClaimOutcome): Claim => {
    assert.equal(outcome.kind, 'claimed');
    return (outcome as { claim: Claim }).claim;
  };
  const job = (resourceId: string, key: string) => createEnvelope({ type: 'order.ship', resourceId, idempotencyKey: key, payload: {} });

  it('a holder stalled past its lease: its commit reaches DynamoDB after a newer holder took the lock, is refused by its fence, and counts as refused', async () => {
    // GIVEN a holder whose commit is held on the wire past its lease
    const first = claimed(await store().claim(job('fw-1', 'fw-first')));
    stallNext = true;
    const commit = store().commitClaimed(first, { writes: [], result: { by: 'first' } });
    // WHEN another job takes the expired lock meanwhile, and the stalled commit lands after
    await sleep(LEASE_MS + 100);
    const second = claimed(await store().claim(job('fw-1', 'fw-second')));
    assert.ok(second.fence > first.fence);
    await assert.rejects(commit, FencedError);
    await store().commitClaimed(second, { writes: [], result: { by: 'second' } });
    // THEN the watch saw the stale write refused, and nothing stale land
    const report = watch.report();
    assert.deepEqual([report.staleWritesRefused, report.staleWritesApplied, report.liveTakeovers], [1, [], []]);
    assert.ok(report.acquisitions >= 2);
  });

  it('a stale write that lands (a release without its fence condition) is reported with its resource and both fences', async () => {
    const first = claimed(await store().claim(job('fw-2', 'fw-third')));
    await sleep(LEASE_MS + 100);
    const second = claimed(await store().claim(job('fw-2', 'fw-fourth')));
    // A fence broken on purpose: the first holder's release, its condition made one that always holds.
    const release = releaseLockItem(control, { resourceId: 'fw-2', ownerToken: first.ownerToken, fence: first.fence });
    assert.ok(release.Update);
    await documents.send(new TransactWriteCommand({
      TransactItems: [{ Update: { ...release.Update, ConditionExpression: 'attribute_exists(pk) OR ownerToken = :token OR fence = :fence' } }],
    }));
    const landed = watch.report().staleWritesApplied;
    assert.equal(landed.length, 1, JSON.stringify(landed));
    assert.match(landed[0] ?? '', new RegExp(`release of fw-2 for fence ${first.fence} landed after fence ${second.fence}`));
  });

  it("a lock taken while its holder's lease runs (an acquisition that ignores the lease) is reported as a live takeover", async () => {
    // GIVEN a holder whose lease runs for another LEASE_MS
    const first = claimed(await store().claim(job('fw-3', 'fw-fifth')));
    const staleBefore = watch.report().staleWritesApplied.length;
    // WHEN another acquisition takes it at once, its condition broken on purpose to ignore the lease (the fence still grows)
    const nowMs = Date.now();
    const taking = acquireLockItem(control, { resourceId: 'fw-3', ownerToken: 'intruder', fence: first.fence + 1 }, nowMs + LEASE_MS, nowMs);
    assert.ok(taking.Update);
    const { ':now': _now, ...values } = taking.Update.ExpressionAttributeValues ?? {};
    await documents.send(new TransactWriteCommand({ TransactItems: [{ Update: { ...taking.Update, ConditionExpression: 'attribute_not_exists(pk) OR fence < :fence', ExpressionAttributeValues: values } }] }));
    // THEN the watch reports it, with both fences; nothing else looks wrong
    const takeovers = watch.report().liveTakeovers;
    assert.equal(takeovers.length, 1, JSON.stringify(takeovers));
    assert.match(takeovers[0] ?? '', new RegExp(`acquire of fw-3 with fence ${first.fence + 1} sent \\d+ ms before the lease of fence ${first.fence} ended`));
    assert.equal(watch.report().staleWritesApplied.length, staleBefore);
  });
});
