import type { JobHandler } from '../../../shared/batch/index.ts';
import { bookShipmentJob, type ShipmentJobOptions } from './shipment.ts';
import { receiveJob, releaseJob, reserveJob } from './stock.ts';

export { bookShipmentJob, receiveJob, releaseJob, reserveJob };

/** Every job type of the inventory workload. */
export function inventoryJobs(options: ShipmentJobOptions): JobHandler[] {
  return [receiveJob(options), reserveJob(options), releaseJob(options), bookShipmentJob(options)];
}
