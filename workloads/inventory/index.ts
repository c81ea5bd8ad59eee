/**
 * A second workload, in another domain than accounts, shipped and deployed by the same stack:
 * stock of SKUs (`stock.receive`, `stock.reserve`, `stock.release`, DynamoDB-only; overselling
 * refused) and carrier shipments of reserved stock (`shipment.book`, external, under the lock of
 * every reservation it ships). SKUs are cached and served at `GET /skus/{id}`.
 */
import { defineWorkload } from '@ballast-stack/ballast';
import { skuEntity } from './entity.ts';
import { INVENTORY_JOB_TYPES } from './job-types.ts';
import { INVENTORY_REASONS } from './reasons.ts';

export { CACHED_SKU, skuEntity, toCachedSku, type CachedSku } from './entity.ts';
export { INVENTORY_JOB_TYPES } from './job-types.ts';
export { INVENTORY_REASONS } from './reasons.ts';
export {
  RESERVATION_STATUS, reservationKey, SHIPMENT_BOOK, shipmentKey, skuKey, STOCK_JOBS, STOCK_RECEIVE, STOCK_RELEASE, STOCK_RESERVE,
  type Reservation, type ShipmentBook, type Sku, type StockReceive, type StockRelease, type StockReserve,
} from './schemas.ts';

/** Base URL of the carrier API that `shipment.book` calls. */
export const CARRIER_API_URL = 'CARRIER_API_URL';

export const inventory = defineWorkload({
  name: 'inventory',
  settings: [CARRIER_API_URL],
  reasons: [
    { code: INVENTORY_REASONS.insufficientStock },
    { code: INVENTORY_REASONS.reservationNotFound },
    { code: INVENTORY_REASONS.reservationNotActive },
    { code: INVENTORY_REASONS.idTaken },
    { code: INVENTORY_REASONS.carrierRejected, dependencyRejection: true },
  ],
  entities: [skuEntity],
  jobTypes: INVENTORY_JOB_TYPES,
  jobs: new URL('./jobs/index.ts', import.meta.url),
  local: new URL('./local/index.ts', import.meta.url),
  vocabulary: [/\bsku/i, /stock\./, /\breservation/i, /shipment/i, /\bcarrier/i, /\/skus\b/, /\binventory\b/i],
});
