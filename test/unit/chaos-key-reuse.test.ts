/**
 * The chaos run's key reuses: a committed opening's idempotency key sent again for another resource
 * of the same job type, which the worker must dead-letter as reused (never apply, never drop).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Envelope } from '../../shared/envelope/index.ts';
import type { DeadLetter } from '../../shared/operations/dlq-messages.ts';
import { chaosWorkload } from '../../local/chaos/workload.ts';
import { isKeyReuse } from '../../local/chaos/invariants.ts';
import { WORKLOADS } from '../../workloads/registry.ts';

describe('chaos traffic: key reuses', () => {
  it("reuses openings' keys for other resources of their type, among the main phase's messages", async () => {
    const workload = await chaosWorkload(WORKLOADS, { seed: 7, jobs: 1_000, keyReuseRate: 0.005 });
    assert.equal(workload.keyReuses.length, 5);
    const openings = new Map(workload.openings.map((message) => [JSON.parse(message.body).idempotencyKey as string, JSON.parse(message.body) as Envelope]));
    const sent = workload.messages.filter((message) => message.role === 'key-reuse');
    assert.deepEqual(sent.map((message) => message.body).sort(), workload.keyReuses.map((reuse) => reuse.body).sort());
    assert.equal(new Set(workload.keyReuses.map((reuse) => reuse.original.idempotencyKey)).size, 5, 'each opening reused once at most');
    for (const reuse of workload.keyReuses) {
      const envelope = JSON.parse(reuse.body) as Envelope;
      const original = openings.get(envelope.idempotencyKey);
      assert.ok(original, `${envelope.idempotencyKey} is an opening's key`);
      // Same key, type and payload; another job id, and another resource the same type of job opens.
      assert.deepEqual([envelope.type, envelope.payload], [original.type, original.payload]);
      assert.notEqual(envelope.jobId, original.jobId);
      assert.equal(envelope.jobId, reuse.jobId);
      assert.notEqual(envelope.resourceId, original.resourceId);
      assert.ok([...openings.values()].some((other) => other.type === envelope.type && other.resourceId === envelope.resourceId), envelope.resourceId);
    }
  });

  it('sends none unless asked, and tells a reuse\'s dead letter from its original\'s by job id', async () => {
    assert.deepEqual((await chaosWorkload(WORKLOADS, { seed: 7, jobs: 1_000 })).keyReuses, []);
    const workload = await chaosWorkload(WORKLOADS, { seed: 7, jobs: 1_000, keyReuseRate: 0.002 });
    const [reuse] = workload.keyReuses;
    assert.ok(reuse);
    const letter = (body: string) => ({ envelope: JSON.parse(body) as Envelope }) as DeadLetter;
    assert.equal(isKeyReuse(workload, letter(reuse.body)), true);
    assert.equal(isKeyReuse(workload, letter(reuse.original.body)), false);
  });
});
