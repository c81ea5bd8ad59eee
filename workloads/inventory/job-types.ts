import { defineJobTypes } from '@ballast-stack/ballast';
import { reservationResource, SHIPMENT_BOOK, STOCK_JOBS, STOCK_RECEIVE, STOCK_RELEASE, STOCK_RESERVE } from './schemas.ts';

/** The inventory workload's job types, as producers and the worker see them. */
export const INVENTORY_JOB_TYPES = defineJobTypes({
  [STOCK_JOBS.receive]: { payload: STOCK_RECEIVE, requiresIdempotencyKey: true, resourceIdIs: 'the SKU id' },
  [STOCK_JOBS.reserve]: {
    payload: STOCK_RESERVE, requiresIdempotencyKey: true, resourceIdIs: 'the SKU id', resources: ({ payload }) => [reservationResource(payload.reservationId)],
  },
  [STOCK_JOBS.release]: {
    payload: STOCK_RELEASE, requiresIdempotencyKey: true, resourceIdIs: 'the SKU id', resources: ({ payload }) => [reservationResource(payload.reservationId)],
  },
  [STOCK_JOBS.book]: {
    payload: SHIPMENT_BOOK, requiresIdempotencyKey: true, resourceIdIs: 'the shipment id',
    resources: ({ payload }) => payload.reservationIds.map(reservationResource),
  },
});
