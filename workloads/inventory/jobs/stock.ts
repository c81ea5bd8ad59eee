import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TransactionalJob } from '@ballast-stack/ballast';
import { FatalError } from '@ballast-stack/ballast';
import { STATE_TABLE } from '@ballast-stack/ballast';
import { INVENTORY_REASONS } from '../reasons.ts';
import {
  RESERVATION_STATUS, reservationKey, skuKey, STOCK_JOBS, STOCK_RECEIVE, STOCK_RELEASE, STOCK_RESERVE,
  type Reservation, type StockReceive, type StockRelease, type StockReserve,
} from '../schemas.ts';

export interface StockJobOptions {
  readonly stateTableName: string;
  /** For `stock.release`, which reads the reservation it releases. */
  readonly documents: DynamoDBDocumentClient;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

const key = (pk: string) => ({ [STATE_TABLE.partitionKey]: pk });

/** `stock.receive`: adds stock to the SKU (creating it on its first delivery), one version up. */
export function receiveJob(options: StockJobOptions): TransactionalJob<StockReceive> {
  const nowMs = options.nowMs ?? Date.now;
  return {
    type: STOCK_JOBS.receive,
    payload: STOCK_RECEIVE,
    effects: 'dynamodb',
    plan: ({ envelope, payload }) => ({
      result: { skuId: envelope.resourceId, received: payload.quantity },
      writes: [{
        item: {
          Update: {
            TableName: options.stateTableName,
            Key: key(skuKey(envelope.resourceId)),
            UpdateExpression: 'SET skuId = :id, updatedAt = :now ADD available :q, version :one',
            ExpressionAttributeValues: { ':id': envelope.resourceId, ':q': payload.quantity, ':now': new Date(nowMs()).toISOString(), ':one': 1 },
          },
        },
        onConditionFailed: () => new FatalError(INVENTORY_REASONS.insufficientStock, 'unreachable: a receive has no condition'),
      }],
    }),
  };
}

/**
 * `stock.reserve`: decrements the SKU's available stock and creates the reservation item in one
 * transaction with the idempotency record. Overselling is refused by DynamoDB's condition
 * (`available >= :q`) as `insufficient-stock`, with nothing applied; a duplicate reserves nothing.
 */
export function reserveJob(options: StockJobOptions): TransactionalJob<StockReserve> {
  const nowMs = options.nowMs ?? Date.now;
  return {
    type: STOCK_JOBS.reserve,
    payload: STOCK_RESERVE,
    effects: 'dynamodb',
    plan({ envelope, payload }) {
      const now = new Date(nowMs()).toISOString();
      const skuId = envelope.resourceId;
      return {
        result: { skuId, reservationId: payload.reservationId, reserved: payload.quantity },
        writes: [
          {
            item: {
              Update: {
                TableName: options.stateTableName,
                Key: key(skuKey(skuId)),
                UpdateExpression: 'SET available = available - :q, updatedAt = :now ADD version :one',
                ConditionExpression: 'available >= :q',
                ExpressionAttributeValues: { ':q': payload.quantity, ':now': now, ':one': 1 },
              },
            },
            onConditionFailed: (current) => new FatalError(INVENTORY_REASONS.insufficientStock,
              current ? `sku ${skuId} has ${String(current.available)} available, cannot reserve ${payload.quantity}` : `sku ${skuId} has no stock (never received)`,
              { context: { available: current?.available ?? 0, quantity: payload.quantity } }),
          },
          {
            item: {
              Put: {
                TableName: options.stateTableName,
                Item: {
                  ...key(reservationKey(payload.reservationId)), reservationId: payload.reservationId, skuId, quantity: payload.quantity,
                  status: RESERVATION_STATUS.reserved, version: 1, updatedAt: now,
                },
                ConditionExpression: `attribute_not_exists(${STATE_TABLE.partitionKey})`,
              },
            },
            onConditionFailed: () => new FatalError(INVENTORY_REASONS.idTaken, `reservation ${payload.reservationId} already exists (another job's)`),
          },
        ],
      };
    },
  };
}

/**
 * `stock.release`: gives a reservation's quantity back to its SKU and marks it released, in one
 * transaction conditioned on it still being `reserved` for this SKU. The reservation is read
 * first (for its quantity); only its absence is refused on that read, so a duplicate of a
 * completed release is still recognised by its idempotency record rather than refused as no
 * longer active.
 */
export function releaseJob(options: StockJobOptions): TransactionalJob<StockRelease> {
  const nowMs = options.nowMs ?? Date.now;
  return {
    type: STOCK_JOBS.release,
    payload: STOCK_RELEASE,
    effects: 'dynamodb',
    async plan({ envelope, payload }) {
      const skuId = envelope.resourceId;
      const { Item } = await options.documents.send(new GetCommand({
        TableName: options.stateTableName, Key: key(reservationKey(payload.reservationId)), ConsistentRead: true,
      }));
      const reservation = Item as Reservation | undefined;
      const notFound = () => new FatalError(INVENTORY_REASONS.reservationNotFound, `reservation ${payload.reservationId} does not exist`);
      // Safe to refuse on the read: a release that completed left its reservation behind, so a
      // missing one means no release of it ever committed (nor can this one commit nothing).
      if (!reservation) throw notFound();
      const now = new Date(nowMs()).toISOString();
      return {
        result: { skuId, reservationId: payload.reservationId, released: reservation.quantity },
        writes: [
          {
            item: {
              Update: {
                TableName: options.stateTableName,
                Key: key(reservationKey(payload.reservationId)),
                UpdateExpression: 'SET #status = :released, updatedAt = :now ADD version :one',
                ConditionExpression: '#status = :reserved AND skuId = :sku AND quantity = :q',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: {
                  ':released': RESERVATION_STATUS.released, ':reserved': RESERVATION_STATUS.reserved, ':sku': skuId, ':q': reservation.quantity, ':now': now, ':one': 1,
                },
              },
            },
            onConditionFailed: (current) => (current
              ? new FatalError(INVENTORY_REASONS.reservationNotActive,
                `reservation ${payload.reservationId} is ${String(current.status)} for sku ${String(current.skuId)}: it cannot be released from sku ${skuId}`)
              : notFound()),
          },
          {
            item: {
              Update: {
                TableName: options.stateTableName,
                Key: key(skuKey(skuId)),
                UpdateExpression: 'SET updatedAt = :now ADD available :q, version :one',
                ConditionExpression: `attribute_exists(${STATE_TABLE.partitionKey})`,
                ExpressionAttributeValues: { ':q': reservation.quantity, ':now': now, ':one': 1 },
              },
            },
            onConditionFailed: () => new FatalError(INVENTORY_REASONS.reservationNotActive, `sku ${skuId} of reservation ${payload.reservationId} does not exist`),
          },
        ],
      };
    },
  };
}
