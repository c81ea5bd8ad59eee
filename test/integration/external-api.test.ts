/**
 * The generic fake of an external HTTP API, configured as a carrier that books shipments: the
 * Idempotency-Key, fencing and fault controls hold for a domain the framework does not know.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startExternalApi, type ExternalApi } from '../../local/external-api/index.ts';

describe('external API fake: idempotent, fenced, with test controls, for any domain', () => {
  let api: ExternalApi;
  before(async () => {
    api = await startExternalApi({
      name: 'carrier',
      path: /^\/shipments\/([^/]+)$/,
      answer: ({ resourceId, revision }) => ({ shipmentId: resourceId, trackingNumber: `TRK-${resourceId}-${revision}` }),
    });
  });
  after(() => api.stop());

  /** Books `shipmentId` with the given headers (a key and a fence unless left out). */
  const book = (shipmentId: string, headers: Record<string, string>, body: unknown = { parcels: 1 }) =>
    fetch(`${api.url}/shipments/${encodeURIComponent(shipmentId)}`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
    });

  it('a first call takes effect once; the same key replays the stored answer without a second effect', async () => {
    const first = await book('ship 1', { 'idempotency-key': 'book-1', 'x-fencing-token': '1' });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    assert.deepEqual(await first.json(), { shipmentId: 'ship 1', trackingNumber: 'TRK-ship 1-1' }, 'the id is percent-decoded');

    const again = await book('ship 1', { 'idempotency-key': 'book-1', 'x-fencing-token': '1' });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), { shipmentId: 'ship 1', trackingNumber: 'TRK-ship 1-1' });
    assert.equal(api.effects('ship 1'), 1);
    assert.deepEqual(api.keys().get('book-1'), { calls: 2, effects: 1 });
  });

  it('a new key on the same shipment is a second effect with the next revision', async () => {
    const second = await book('ship 1', { 'idempotency-key': 'book-2', 'x-fencing-token': '1' });
    assert.deepEqual(await second.json(), { shipmentId: 'ship 1', trackingNumber: 'TRK-ship 1-2' });
    assert.equal(api.effects('ship 1'), 2);
  });

  it('the same key with a different body is refused (422) without effect', async () => {
    const reused = await book('ship 1', { 'idempotency-key': 'book-1', 'x-fencing-token': '1' }, { parcels: 9 });
    assert.equal(reused.status, 422);
    assert.equal(api.effects('ship 1'), 2);
  });

  it('a call without Idempotency-Key is a 400', async () => {
    const keyless = await book('ship 2', { 'x-fencing-token': '1' });
    assert.equal(keyless.status, 400);
    assert.equal(api.effects('ship 2'), 0);
  });

  it('a fencing token lower than one seen for the shipment is refused (409) without effect', async () => {
    assert.equal((await book('ship 3', { 'idempotency-key': 'fence-new', 'x-fencing-token': '5' })).status, 200);
    const stale = await book('ship 3', { 'idempotency-key': 'fence-stale', 'x-fencing-token': '4' });
    assert.equal(stale.status, 409);
    assert.equal(api.effects('ship 3'), 1);
    assert.deepEqual(api.keys().get('fence-stale'), { calls: 1, effects: 0 });
  });

  it('another path or method is a 404', async () => {
    assert.equal((await fetch(`${api.url}/shipments/ship-4`, { headers: { 'idempotency-key': 'get-1' } })).status, 404);
    const elsewhere = await fetch(`${api.url}/profiles/ship-4/sync`, { method: 'POST', headers: { 'idempotency-key': 'post-1' }, body: '{}' });
    assert.equal(elsewhere.status, 404);
    assert.equal(api.effects('ship-4'), 0);
  });

  it('failNext answers 503 for the next calls only, then the shipment books', async () => {
    api.failNext('ship-5', 2);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      assert.equal((await book('ship-5', { 'idempotency-key': 'fail-1' })).status, 503);
    }
    assert.equal(api.effects('ship-5'), 0);
    assert.equal((await book('ship-5', { 'idempotency-key': 'fail-1' })).status, 200);
    assert.equal(api.effects('ship-5'), 1);
  });

  it('a chaos server-error rate of 1 answers 503 without effect, and counts what it injected', async () => {
    api.setChaos({ random: () => 0, serverErrorRate: 1 });
    try {
      const overloaded = await book('ship-6', { 'idempotency-key': 'chaos-1' });
      assert.equal(overloaded.status, 503);
      assert.deepEqual(await overloaded.json(), { error: 'injected: carrier overloaded' });
    } finally {
      api.setChaos(undefined);
    }
    assert.equal(api.effects('ship-6'), 0);
    assert.equal(api.injected()['server-error'], 1);
  });

  it('the first faults are one of each enabled kind, however rare, then as drawn', async () => {
    // GIVEN a schedule whose every draw lands on server-error, with hangs enabled at 1 % (and short)
    api.setChaos({ random: () => 0, serverErrorRate: 0.9, hangRate: 0.01, hangMs: 1 });
    const before = api.injected();
    try {
      // WHEN three calls draw faults
      for (const key of ['rare-1', 'rare-2', 'rare-3']) await book('ship-rare', { 'idempotency-key': key });
    } finally {
      api.setChaos(undefined);
    }
    // THEN the hang, never injected before (a server-error was, above), came first; then as drawn
    const after = api.injected();
    assert.deepEqual([after['server-error'] - before['server-error'], after.hang - before.hang], [2, 1]);
  });

  it('effects() and keys() add up over every shipment and key', () => {
    // ship 1: book-1, book-2; ship 3: fence-new; ship-5: fail-1; ship-rare: rare-1 (the hang answers late, with its effect).
    assert.equal(api.effects(), 5);
    const effectsByKey = Object.fromEntries([...api.keys()].map(([key, seen]) => [key, seen.effects]));
    assert.deepEqual(effectsByKey, { 'book-1': 1, 'book-2': 1, 'fence-new': 1, 'fence-stale': 0, 'fail-1': 1, 'chaos-1': 0, 'rare-1': 1, 'rare-2': 0, 'rare-3': 0 });
  });
});
