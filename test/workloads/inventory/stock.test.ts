import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { INVENTORY_REASONS, RESERVATION_STATUS, reservationKey, shipmentKey, skuKey, STOCK_JOBS, type Reservation, type Sku } from '../../../workloads/inventory/index.ts';
import { METRICS } from '../../../shared/observability/index.ts';
import { captureOutput, metricTotal } from '../../helpers/output.ts';
import { exitOf, runNode, waitForOutput } from '../../helpers/processes.ts';
import { useWorkerHarness, type TestQueues } from '../../helpers/worker-harness.ts';

const childWorker = fileURLToPath(new URL('../../helpers/worker-child.ts', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('inventory workload on DynamoDB Local + fauxqs: stock and shipments', () => {
  const h = useWorkerHarness();
  const item = async <T>(pk: string) => (await h.local.documents.send(new GetCommand({ TableName: h.tables.state, Key: { pk }, ConsistentRead: true }))).Item as T | undefined;
  const job = (type: string, resourceId: string, idempotencyKey: string, payload: Record<string, unknown>) => h.envelope({ type, resourceId, idempotencyKey, payload });
  const run = async (queues: TestQueues) => (await captureOutput(() => h.drain(queues, h.worker(queues)))).output;

  it('reserves exactly once under duplicates, refuses an oversell as insufficient-stock with nothing applied', async () => {
    const queues = await h.queues();
    await h.send(queues, job(STOCK_JOBS.receive, 'sku-a', 'delivery-1', { quantity: 10 }));
    await run(queues);
    const reserve = job(STOCK_JOBS.reserve, 'sku-a', 'order-1', { reservationId: 'res-a1', quantity: 6 });
    for (let i = 0; i < 3; i += 1) await h.send(queues, reserve);
    const output = await run(queues);
    assert.deepEqual([metricTotal(output, METRICS.processed), metricTotal(output, METRICS.duplicates)], [1, 2]);
    await h.send(queues, job(STOCK_JOBS.reserve, 'sku-a', 'order-2', { reservationId: 'res-a2', quantity: 5 }));
    await run(queues);
    const dead = await h.deadLetters(queues);
    assert.deepEqual(dead.map((letter) => letter.reason), [INVENTORY_REASONS.insufficientStock]);
    const sku = await item<Sku>(skuKey('sku-a'));
    assert.deepEqual([sku?.available, sku?.version], [4, 2], 'one receive, one reservation: never negative');
    assert.equal((await item<Reservation>(reservationKey('res-a1')))?.quantity, 6);
    assert.equal(await item(reservationKey('res-a2')), undefined, 'the refused reservation was not created');
  });

  it('releases a reservation once; a release of an unknown one is refused with its reason', async () => {
    const queues = await h.queues();
    await h.send(queues, job(STOCK_JOBS.receive, 'sku-b', 'delivery-b', { quantity: 5 }));
    await run(queues);
    await h.send(queues, job(STOCK_JOBS.reserve, 'sku-b', 'order-b', { reservationId: 'res-b1', quantity: 3 }));
    await run(queues);
    const release = job(STOCK_JOBS.release, 'sku-b', 'cancel-b', { reservationId: 'res-b1' });
    await h.send(queues, release);
    await h.send(queues, release);
    await h.send(queues, job(STOCK_JOBS.release, 'sku-b', 'cancel-x', { reservationId: 'res-nobody' }));
    await run(queues);
    assert.equal((await item<Sku>(skuKey('sku-b')))?.available, 5, 'the stock came back once');
    assert.equal((await item<Reservation>(reservationKey('res-b1')))?.status, RESERVATION_STATUS.released);
    assert.deepEqual((await h.deadLetters(queues)).map((letter) => letter.reason), [INVENTORY_REASONS.reservationNotFound]);
    // a second release under a new key finds the reservation no longer active
    await h.send(queues, job(STOCK_JOBS.release, 'sku-b', 'cancel-b-again', { reservationId: 'res-b1' }));
    await run(queues);
    assert.deepEqual((await h.deadLetters(queues)).map((letter) => letter.reason), [INVENTORY_REASONS.reservationNotActive]);
    assert.equal((await item<Sku>(skuKey('sku-b')))?.available, 5);
  });

  it('books a shipment of two reservations once: the carrier sees one effect, both reservations are shipped', async () => {
    const queues = await h.queues();
    await h.send(queues, job(STOCK_JOBS.receive, 'sku-c', 'delivery-c', { quantity: 9 }));
    await run(queues);
    for (const [reservationId, quantity] of [['res-c1', 2], ['res-c2', 3]] as const) {
      await h.send(queues, job(STOCK_JOBS.reserve, 'sku-c', `order-${reservationId}`, { reservationId, quantity }));
    }
    await run(queues);
    const book = job(STOCK_JOBS.book, 'ship-c', 'ship-order-c', { reservationIds: ['res-c2', 'res-c1'] });
    await h.send(queues, book);
    await h.send(queues, book);
    await run(queues);
    assert.equal(h.carrier.effects('ship-c'), 1);
    assert.deepEqual(await h.deadLetters(queues), []);
    const shipment = await item<{ trackingNumber: string; reservationIds: string[] }>(shipmentKey('ship-c'));
    assert.equal(shipment?.trackingNumber, 'TRK-ship-c-1');
    for (const id of ['res-c1', 'res-c2']) assert.equal((await item<Reservation>(reservationKey(id)))?.status, RESERVATION_STATUS.shipped, id);
    // a second shipment of a shipped reservation is refused before the carrier is called
    await h.send(queues, job(STOCK_JOBS.book, 'ship-c2', 'ship-order-c2', { reservationIds: ['res-c1'] }));
    await run(queues);
    assert.deepEqual((await h.deadLetters(queues)).map((letter) => letter.reason), [INVENTORY_REASONS.reservationNotActive]);
    assert.equal(h.carrier.effects('ship-c2'), 0);
  });

  it('a crash after the carrier call and before the commit: the redelivery books nothing twice', async () => {
    const queues = await h.queues({ visibilityTimeoutSeconds: 2 });
    await h.send(queues, job(STOCK_JOBS.receive, 'sku-d', 'delivery-d', { quantity: 4 }));
    await run(queues);
    await h.send(queues, job(STOCK_JOBS.reserve, 'sku-d', 'order-d', { reservationId: 'res-d1', quantity: 4 }));
    await run(queues);
    await h.send(queues, job(STOCK_JOBS.book, 'ship-d', 'ship-order-d', { reservationIds: ['res-d1'] }));
    // GIVEN a worker that claimed the booking (locking the reservation), called the carrier, and died
    const child = runNode(childWorker, [], { BALLAST_TEST_WORKER: JSON.stringify({ queues, config: h.config(queues, { leaseMs: 1_500 }), holdMs: 60_000 }) });
    await waitForOutput(child, /SIDE_EFFECT_DONE/, 30_000);
    child.kill('SIGKILL');
    await exitOf(child, 5_000);
    assert.equal(h.carrier.effects('ship-d'), 1);
    // WHEN the message reappears after its visibility timeout and the lease has expired
    await sleep(2_100);
    await captureOutput(() => h.drain(queues, h.worker(queues, { config: { leaseMs: 1_500 } })));
    // THEN the carrier's replay completed it: one booking, the reservation shipped with it
    assert.equal(h.carrier.effects('ship-d'), 1);
    assert.equal((await item<{ trackingNumber: string }>(shipmentKey('ship-d')))?.trackingNumber, 'TRK-ship-d-1');
    assert.equal((await item<Reservation>(reservationKey('res-d1')))?.status, RESERVATION_STATUS.shipped);
  });
});
