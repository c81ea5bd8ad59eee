import * as z from 'zod/mini';
import { entityKey } from '@ballast-stack/ballast';

/** The inventory workload's job types. */
export const STOCK_JOBS = {
  receive: 'stock.receive',
  reserve: 'stock.reserve',
  release: 'stock.release',
  book: 'shipment.book',
} as const;

const quantity = z.int().check(z.positive(), z.maximum(1_000_000));
/** Ids that also name cache keys and lock items (see `CACHE_ID_RULE`). */
const id = z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, 'must be 1-128 letters, digits, -, _ or ., starting with a letter or digit'));

/** Stock arriving at the SKU (the job's `resourceId`). */
export const STOCK_RECEIVE = z.object({ quantity });
export type StockReceive = z.infer<typeof STOCK_RECEIVE>;

/** Takes `quantity` from the SKU's available stock into a new reservation, atomically. */
export const STOCK_RESERVE = z.object({ reservationId: id, quantity });
export type StockReserve = z.infer<typeof STOCK_RESERVE>;

/** Gives a reservation's stock back to its SKU. */
export const STOCK_RELEASE = z.object({ reservationId: id });
export type StockRelease = z.infer<typeof STOCK_RELEASE>;

/** Books one carrier shipment (the job's `resourceId`) for reserved stock. */
export const SHIPMENT_BOOK = z.object({
  reservationIds: z.array(id).check(z.minLength(1), z.maxLength(10), z.refine((ids) => new Set(ids).size === ids.length, 'must not repeat a reservation')),
});
export type ShipmentBook = z.infer<typeof SHIPMENT_BOOK>;

/** Reservation states: `reserved` holds stock; `released` gave it back; `shipped` left with a shipment. */
export const RESERVATION_STATUS = { reserved: 'reserved', released: 'released', shipped: 'shipped' } as const;

/** A SKU on the state table (`pk = sku#<id>`). */
export interface Sku {
  readonly pk: string;
  readonly skuId: string;
  /** Stock not reserved: never negative (every decrement is conditioned on it). */
  readonly available: number;
  readonly version: number;
  readonly updatedAt: string;
}

/** A reservation on the state table (`pk = reservation#<id>`). */
export interface Reservation {
  readonly pk: string;
  readonly reservationId: string;
  readonly skuId: string;
  readonly quantity: number;
  readonly status: (typeof RESERVATION_STATUS)[keyof typeof RESERVATION_STATUS];
  readonly shipmentId?: string;
  readonly version: number;
  readonly updatedAt: string;
}

export const skuKey = (skuId: string) => entityKey('sku', skuId);
export const reservationKey = (reservationId: string) => entityKey('reservation', reservationId);
export const shipmentKey = (shipmentId: string) => entityKey('shipment', shipmentId);
/** A reservation as a resource a job touches (lanes, locks): apart from SKU and shipment ids. */
export const reservationResource = (reservationId: string) => `reservation#${reservationId}`;
