/** Why the inventory workload's jobs are refused (each a DLQ `ballast.reason`, a metric dimension, a replay filter). */
export const INVENTORY_REASONS = {
  /** A reservation larger than the SKU's available stock (or of a SKU never received): overselling is refused. */
  insufficientStock: 'insufficient-stock',
  /** The job names a reservation that does not exist. */
  reservationNotFound: 'reservation-not-found',
  /** The reservation was already released or shipped (by another job), or belongs to another SKU. */
  reservationNotActive: 'reservation-not-active',
  /** Another job already created this reservation or shipment id. */
  idTaken: 'id-taken',
  /** The carrier API refused the booking, or answered with something that is not a booking. */
  carrierRejected: 'carrier-rejected',
} as const;
