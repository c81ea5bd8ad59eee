import { startExternalApi, type ExternalApi } from '@ballast-stack/ballast/local';

/**
 * The carrier booking API that `shipment.book` calls: `POST /shipments/{shipmentId}` books once
 * per Idempotency-Key (a replay answers the same booking), refuses a fence lower than one it has
 * seen for the shipment (409), and answers a tracking number.
 */
export type CarrierApi = ExternalApi;

export function startCarrierApi(options: { port?: number } = {}): Promise<CarrierApi> {
  return startExternalApi({
    name: 'carrier',
    path: /^\/shipments\/([^/]+)$/,
    answer: ({ resourceId, revision, key }) => ({ shipmentId: resourceId, trackingNumber: `TRK-${resourceId}-${revision}`, bookedBy: key }),
    port: options.port,
  });
}
