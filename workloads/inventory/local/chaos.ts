import type { ChaosCheck, ChaosJob, ChaosTrafficRequest, WorkloadChaos } from '@ballast-stack/ballast/local';
import { CARRIER_API_URL } from '../index.ts';
import { INVENTORY_REASONS } from '../reasons.ts';
import { RESERVATION_STATUS, STOCK_JOBS } from '../schemas.ts';

const SKUS = 50;

/**
 * The inventory workload in the chaos run: deliveries, reservations (one in ten past any stock:
 * an oversell), releases and carrier shipments of up to three reservations (external, under the
 * lock of each), on hot SKUs. A reservation is released or shipped, never both; a release or a
 * shipment may be delivered before its reservation, and is then refused as not found.
 */
export const inventoryChaos: WorkloadChaos = {
  weight: 1,
  rejections: { [INVENTORY_REASONS.carrierRejected]: CARRIER_API_URL },
  traffic({ seed, random, job }: ChaosTrafficRequest) {
    const skuIds = Array.from({ length: SKUS }, (_, i) => `sku-${String(i).padStart(4, '0')}`);
    const hot = () => skuIds[Math.floor(random() ** 2 * SKUS)] as string;
    /** Reservations sent and not yet released or shipped by a later job. */
    const open: { readonly reservationId: string; readonly skuId: string }[] = [];
    const take = () => open.splice(Math.floor(random() * open.length), 1)[0] as (typeof open)[number];
    const notFound = [INVENTORY_REASONS.reservationNotFound];
    let ids = 0;
    return {
      sizes: { skus: SKUS },
      reads: skuIds.map((id) => `skus/${id}`),
      openings: skuIds.map((id) => job('opening-stock', STOCK_JOBS.receive, id, { quantity: 200 }, [])),
      next(): ChaosJob {
        const mix = random();
        if (mix < 0.12) return job('receive', STOCK_JOBS.receive, hot(), { quantity: 1 + Math.floor(random() * 100) }, []);
        if (mix < 0.47 || open.length === 0) {
          const reservation = { reservationId: `res-${seed}-${(ids += 1)}`, skuId: hot() };
          open.push(reservation);
          const quantity = random() < 0.1 ? 100_000 : 1 + Math.floor(random() * 30);
          return job('reserve', STOCK_JOBS.reserve, reservation.skuId, { reservationId: reservation.reservationId, quantity }, [INVENTORY_REASONS.insufficientStock]);
        }
        if (mix < 0.71) {
          const { reservationId, skuId } = take();
          return job('release', STOCK_JOBS.release, skuId, { reservationId }, notFound);
        }
        const reservationIds = Array.from({ length: Math.min(open.length, 1 + Math.floor(random() * 3)) }, () => take().reservationId);
        return job('ship', STOCK_JOBS.book, `ship-${seed}-${(ids += 1)}`, { reservationIds }, notFound);
      },
    };
  },
  invariants: {
    negativeStock: 'SKUs with negative available stock (an oversell)',
    stockMismatches: 'SKUs whose stock or version differs from their completed receipts, reservations and releases',
    reservationMismatches: 'reservations not created exactly once by a completed reserve, or in a state no completed job put them in',
    shipmentMismatches: 'committed shipments without exactly one carrier booking, or not recorded with their reservations',
  },
  check({ completed, state, apis, violate }: ChaosCheck) {
    const byPrefix = (prefix: string, id: string) => new Map(state.filter((item) => String(item.pk).startsWith(prefix)).map((item) => [String(item[id]), item]));
    const skus = byPrefix('sku#', 'skuId');
    const reservations = byPrefix('reservation#', 'reservationId');
    const shipments = byPrefix('shipment#', 'shipmentId');
    const carrier = apis.get(CARRIER_API_URL);
    const stock = new Map<string, { available: number; version: number }>();
    const move = (skuId: string, delta: number) => {
      const entry = stock.get(skuId) ?? { available: 0, version: 0 };
      stock.set(skuId, { available: entry.available + delta, version: entry.version + 1 });
    };
    type Result = { skuId?: string; reservationId?: string; received?: number; reserved?: number; released?: number; shipmentId?: string; reservationIds?: string[] };
    const wanted = new Map<string, { skuId: string; quantity: number; status: string; shipmentId?: string }>();
    for (const record of completed.values()) {
      const result = (record.result ?? {}) as Result;
      if (record.jobType === STOCK_JOBS.receive) move(result.skuId ?? '', result.received ?? 0);
      if (record.jobType === STOCK_JOBS.reserve) {
        move(result.skuId ?? '', -(result.reserved ?? 0));
        wanted.set(result.reservationId ?? '', { skuId: result.skuId ?? '', quantity: result.reserved ?? 0, status: RESERVATION_STATUS.reserved });
      }
      if (record.jobType === STOCK_JOBS.release) move(result.skuId ?? '', result.released ?? 0);
    }
    // The state each completed release or shipment leaves its reservations in.
    for (const [key, record] of completed) {
      const result = (record.result ?? {}) as Result;
      if (record.jobType === STOCK_JOBS.release) {
        const reservation = wanted.get(result.reservationId ?? '');
        if (reservation) reservation.status = RESERVATION_STATUS.released;
      }
      if (record.jobType !== STOCK_JOBS.book) continue;
      if ((carrier?.keys().get(key)?.effects ?? 0) !== 1) violate('shipmentMismatches', `${key}: committed with ${carrier?.keys().get(key)?.effects ?? 0} carrier bookings`);
      if (!shipments.has(result.shipmentId ?? '')) violate('shipmentMismatches', `${result.shipmentId}: committed, no shipment item`);
      for (const id of result.reservationIds ?? []) {
        const reservation = wanted.get(id);
        if (reservation) Object.assign(reservation, { status: RESERVATION_STATUS.shipped, shipmentId: result.shipmentId });
      }
    }
    for (const [skuId, item] of skus) {
      if (Number(item.available) < 0) violate('negativeStock', `${skuId}: ${String(item.available)} available`);
    }
    for (const skuId of new Set([...stock.keys(), ...skus.keys()])) {
      const want = stock.get(skuId) ?? { available: 0, version: 0 };
      const item = skus.get(skuId);
      if (Number(item?.available ?? 0) !== want.available || Number(item?.version ?? 0) !== want.version) {
        violate('stockMismatches', `${skuId}: table ${String(item?.available)} v${String(item?.version)}, jobs say ${want.available} v${want.version}`);
      }
    }
    for (const id of new Set([...wanted.keys(), ...reservations.keys()])) {
      const want = wanted.get(id);
      const item = reservations.get(id);
      const agrees = want && item && item.skuId === want.skuId && Number(item.quantity) === want.quantity && item.status === want.status
        && (!want.shipmentId || item.shipmentId === want.shipmentId);
      if (!agrees) {
        violate('reservationMismatches', `${id}: table ${item ? `${String(item.status)} ${String(item.quantity)} of ${String(item.skuId)}` : 'none'}, jobs say ${want ? `${want.status} ${want.quantity} of ${want.skuId}` : 'none'}`);
      }
    }
  },
};
