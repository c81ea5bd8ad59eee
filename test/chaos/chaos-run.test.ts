/**
 * The chaos run in miniature: the same code as `npm run chaos`, about 2,000 jobs, every fault kind
 * at its default rate (a shorter Redis outage), and every invariant must be 0.
 */
import { registry } from '../../workloads/registry.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FAULTS, runChaos } from '../../local/chaos/run.ts';

/**
 * Longer than the suite's 5-minute default: a run takes 4–6 minutes on CI's two cores beside another
 * test file, most of it the drain of what the mid-work kills left in flight (their batches come back
 * after the chaos stack's 24 s visibility timeout).
 */
const RUN_TIMEOUT_MS = 10 * 60_000;

describe('chaos run: exactly-once and never-stale under every fault combined', { timeout: RUN_TIMEOUT_MS }, () => {
  it('1,800 messages on both workloads\' skewed accounts and SKUs: every invariant is 0, every fault kind was injected', { timeout: RUN_TIMEOUT_MS }, async () => {
    const report = await runChaos({
      registry,
      seed: 20261201,
      jobs: 1_800,
      sendRate: 60,
      // A higher rate at the API fakes so each of their four fault kinds surely occurs in a run this small.
      faults: { ...DEFAULT_FAULTS, externalRate: 0.15, redisOutageMs: 10_000 },
      log: (line) => console.log(line),
      drainTimeoutMs: 8 * 60_000,
    });
    console.log(JSON.stringify({ injected: report.injected, phasesSeconds: report.phasesSeconds, replayed: report.replayed, lockRequeues: report.invariants.lockRequeues, fencedWrites: report.invariants.fencedWrites, cacheEntriesCompared: report.invariants.cacheEntriesCompared, readsChecked: report.invariants.readsChecked, keyReusesRefused: report.invariants.keyReusesRefused, keyReusesExcused: report.invariants.keyReusesExcused }));
    // THEN no promise was broken
    assert.deepEqual(report.invariants.counts, Object.fromEntries(Object.keys(report.invariants.counts).map((name) => [name, 0])),
      JSON.stringify({ examples: report.invariants.examples, whatTheFunctionsLogged: report.functionLogs.aboutViolations }, null, 2));
    // (the functions' WARN lines were kept, so a violation would come with what its jobs logged)
    assert.ok(Object.keys(report.functionLogs.counts).some((line) => line.endsWith(' WARN job will be retried')), JSON.stringify(report.functionLogs.counts));
    // AND every fault kind really happened
    for (const kind of ['rollout.canary', 'rollout.rollback', 'rollout.promote', 'crashesAfterWork', 'crashesBeforeWork', 'crashesDuringWork', 'invocationTimeouts', 'holderStalls', 'readerStalls', 'redis.flushall', 'redis.pause', 'redis.outage',
      'dynamodb.throttling', 'dynamodb.provisionedThroughputExceeded', 'dynamodb.internalServerError', 'dynamodb.transactionConflict',
      'dynamodb.lostResponse', 'dynamodb.stall']) {
      assert.ok((report.injected[kind] ?? 0) > 0, `fault ${kind} was injected (${JSON.stringify(report.injected)})`);
    }
    // The API fakes share one fault schedule: each kind hits the partner or the carrier, whichever call draws it.
    for (const kind of ['server-error', 'slow', 'hang', 'non-object']) {
      const atFakes = (report.injected[`partner.${kind}`] ?? 0) + (report.injected[`carrier.${kind}`] ?? 0);
      assert.ok(atFakes > 0, `fault ${kind} was injected at an API fake (${JSON.stringify(report.injected)})`);
    }
    // (both worker versions, each with its own lock lease, did part of the work)
    assert.ok(Object.values(report.rollout?.processed ?? {}).filter((n) => n > 0).length === 2, JSON.stringify(report.rollout));
    assert.ok((report.messages.poison ?? 0) >= 15 && (report.messages['producer-duplicate'] ?? 0) > 100);
    // (a tenth of the traffic is duplicates: the workers screen their batches, and the invariants cover it)
    assert.ok(report.invariants.screenedCommits > 0, 'some commits were answered from screened records');
    // (the cache the readers filled was there to compare: staleCacheEntries holds trivially on an empty one)
    assert.ok(report.invariants.cacheEntriesCompared > 0, 'some cache entries were compared with the table');
    assert.ok((report.invariants.readsChecked ?? 0) > 0, "some readers' answers were held to an invalidation that had finished");
    // (the account convoy: syncs behind one slow account's lock wait past their receives, and are requeued rather than dead-lettered)
    assert.ok((report.messages['convoy-sync'] ?? 0) >= 18, JSON.stringify(report.messages));
    assert.ok(report.invariants.lockRequeues > 0, 'some records met a held lock on their last receive and were requeued');
    // (and the convoy's stalled holders: a newer holder took their lock while they lived, and their late writes met the fence)
    assert.ok((report.invariants.fencedWrites ?? 0) > 0, 'some stale holders\' lock writes were refused by their fence');
    // (a producer reused committed jobs' keys for other resources: refused as reused, none applied)
    // (a reuse excused because faults ran out its receives first is rare: at most one in this run)
    assert.ok((report.messages['key-reuse'] ?? 0) > 0 && report.invariants.keyReusesExcused <= 1, JSON.stringify(report.messages));
    assert.equal(report.invariants.keyReusesRefused + report.invariants.keyReusesExcused, report.messages['key-reuse']);
    // AND both workloads took part, their own invariants checked
    for (const name of ['misjudgedDeadLetters', 'staleReads', 'staleLockWrites', 'liveLockTakeovers', 'ledgerMismatches', 'negativeBalances', 'syncEffects', 'negativeStock', 'stockMismatches', 'reservationMismatches', 'shipmentMismatches']) {
      assert.ok(name in report.invariants.counts, `${name} was checked`);
    }
    assert.ok((report.messages.transfer ?? 0) > 0 && (report.messages.reserve ?? 0) > 0 && (report.messages.ship ?? 0) > 0, JSON.stringify(report.messages));
  });
});
