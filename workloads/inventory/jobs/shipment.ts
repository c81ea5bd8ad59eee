import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ExternalJob } from '@ballast-stack/ballast';
import { FatalError } from '@ballast-stack/ballast';
import { callExternalApi } from '@ballast-stack/ballast';
import { STATE_TABLE } from '@ballast-stack/ballast';
import { INVENTORY_REASONS } from '../reasons.ts';
import { RESERVATION_STATUS, reservationKey, SHIPMENT_BOOK, shipmentKey, STOCK_JOBS, type Reservation, type ShipmentBook } from '../schemas.ts';

export interface ShipmentJobOptions {
  readonly stateTableName: string;
  readonly documents: DynamoDBDocumentClient;
  /** Base URL of the carrier's booking API, e.g. `https://carrier.example.com`. */
  readonly carrierApiUrl: string;
  /** Give up on one carrier call after this long (the job is retried). @default 5_000 */
  readonly carrierTimeoutMs?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

const key = (pk: string) => ({ [STATE_TABLE.partitionKey]: pk });

/**
 * `shipment.book`: books one carrier shipment for a set of reservations. It runs under the locks of
 * every reservation (its job type declares them; the claim takes them in key order, one fence), so
 * two bookings of one reservation never call the carrier at once. The reservations are checked
 * before the call (no booking for stock that is gone); the carrier gets the idempotency key (a
 * retry after a crash books nothing twice) and the fence (it refuses a stalled former holder).
 * The commit records the shipment and marks each reservation shipped, conditioned on each still
 * being reserved.
 */
export function bookShipmentJob(options: ShipmentJobOptions): ExternalJob<ShipmentBook> {
  const nowMs = options.nowMs ?? Date.now;
  const base = options.carrierApiUrl.replace(/\/+$/, '');
  return {
    type: STOCK_JOBS.book,
    payload: SHIPMENT_BOOK,
    effects: 'external',
    async perform({ envelope, payload, claim, signal }) {
      const shipmentId = envelope.resourceId;
      for (const reservationId of payload.reservationIds) {
        const { Item } = await options.documents.send(new GetCommand({ TableName: options.stateTableName, Key: key(reservationKey(reservationId)), ConsistentRead: true }));
        const reservation = Item as Reservation | undefined;
        if (!reservation) throw new FatalError(INVENTORY_REASONS.reservationNotFound, `reservation ${reservationId} does not exist`);
        // Already shipped by this very job (a crash after the commit's first attempt) is fine: the commit below is a duplicate then.
        if (reservation.status !== RESERVATION_STATUS.reserved && reservation.shipmentId !== shipmentId) {
          throw new FatalError(INVENTORY_REASONS.reservationNotActive, `reservation ${reservationId} is ${reservation.status}: nothing to ship`);
        }
      }
      const booking = await callExternalApi({
        name: 'carrier API',
        url: `${base}/shipments/${encodeURIComponent(shipmentId)}`,
        body: { reservationIds: payload.reservationIds },
        idempotencyKey: envelope.idempotencyKey,
        fence: claim.fence,
        signal,
        timeoutMs: options.carrierTimeoutMs,
        rejectedReason: INVENTORY_REASONS.carrierRejected,
      });
      if (typeof booking.trackingNumber !== 'string' || booking.trackingNumber === '') {
        throw new FatalError(INVENTORY_REASONS.carrierRejected, `carrier API booked ${shipmentId} without a tracking number`);
      }
      const now = new Date(nowMs()).toISOString();
      return {
        result: { shipmentId, reservationIds: payload.reservationIds, trackingNumber: booking.trackingNumber },
        writes: [
          {
            item: {
              Put: {
                TableName: options.stateTableName,
                Item: { ...key(shipmentKey(shipmentId)), shipmentId, reservationIds: payload.reservationIds, trackingNumber: booking.trackingNumber, fence: claim.fence, version: 1, updatedAt: now },
                ConditionExpression: `attribute_not_exists(${STATE_TABLE.partitionKey})`,
              },
            },
            onConditionFailed: () => new FatalError(INVENTORY_REASONS.idTaken, `shipment ${shipmentId} already exists (another job's)`),
          },
          ...payload.reservationIds.map((reservationId) => ({
            item: {
              Update: {
                TableName: options.stateTableName,
                Key: key(reservationKey(reservationId)),
                UpdateExpression: 'SET #status = :shipped, shipmentId = :shipment, updatedAt = :now ADD version :one',
                ConditionExpression: '#status = :reserved',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: { ':shipped': RESERVATION_STATUS.shipped, ':reserved': RESERVATION_STATUS.reserved, ':shipment': shipmentId, ':now': now, ':one': 1 },
              },
            },
            onConditionFailed: (current: Record<string, unknown> | undefined) => new FatalError(INVENTORY_REASONS.reservationNotActive,
              `reservation ${reservationId} became ${String(current?.status ?? 'missing')} while ${shipmentId} was booked`),
          })),
        ],
      };
    },
  };
}
