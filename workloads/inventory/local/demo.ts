import type { DemoRequest, DemoTraffic } from '@ballast-stack/ballast/local';
import { STOCK_JOBS } from '../schemas.ts';

const SKUS = 20;

/**
 * The inventory workload's demo traffic: every SKU opens with a delivery, then reservations (some
 * past the stock: `insufficient-stock`), releases and carrier shipments of earlier reservations,
 * and more deliveries. A reservation is released or shipped, never both.
 */
export function inventoryDemo({ jobs, random, message }: DemoRequest): DemoTraffic {
  const count = Math.min(SKUS, Math.max(1, Math.floor(jobs / 10)));
  const id = (n: number) => `sku-${String(n).padStart(3, '0')}`;
  const anySku = () => id(Math.floor(random() * count));
  const open: { reservationId: string; skuId: string }[] = [];
  let ids = 0;
  const take = () => open.splice(Math.floor(random() * open.length), 1)[0] as (typeof open)[number];
  const openings = Array.from({ length: count }, (_, s) => message('receive', STOCK_JOBS.receive, id(s), { quantity: 500 }));
  const messages = Array.from({ length: Math.max(0, jobs - count) }, () => {
    const roll = random();
    if (roll < 0.5 || open.length === 0) {
      const reservation = { reservationId: `res-demo-${(ids += 1)}`, skuId: anySku() };
      open.push(reservation);
      return message('reserve', STOCK_JOBS.reserve, reservation.skuId, { reservationId: reservation.reservationId, quantity: random() < 0.05 ? 10_000 : 1 + Math.floor(random() * 40) });
    }
    if (roll < 0.7) {
      const { reservationId, skuId } = take();
      return message('release', STOCK_JOBS.release, skuId, { reservationId });
    }
    if (roll < 0.9) {
      const reservationIds = Array.from({ length: Math.min(open.length, 1 + Math.floor(random() * 2)) }, () => take().reservationId);
      return message('ship', STOCK_JOBS.book, `ship-demo-${(ids += 1)}`, { reservationIds });
    }
    return message('receive', STOCK_JOBS.receive, anySku(), { quantity: 1 + Math.floor(random() * 100) });
  });
  return { openings, messages, reads: Array.from({ length: count }, (_, s) => `skus/${id(s)}`) };
}
