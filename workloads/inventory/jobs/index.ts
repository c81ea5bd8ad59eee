import { defineJobs, type JobHandler } from '@ballast-stack/ballast';
import { CARRIER_API_URL, inventory } from '../index.ts';
import { bookShipmentJob, type ShipmentJobOptions } from './shipment.ts';
import { receiveJob, releaseJob, reserveJob } from './stock.ts';

export { bookShipmentJob, receiveJob, releaseJob, reserveJob };

/** Every job type of the inventory workload. */
export function inventoryJobs(options: ShipmentJobOptions): JobHandler[] {
  return [receiveJob(options), reserveJob(options), releaseJob(options), bookShipmentJob(options)];
}

export default defineJobs(inventory, (runtime) => inventoryJobs({
  stateTableName: runtime.stateTableName, documents: runtime.documents, carrierApiUrl: runtime.setting(CARRIER_API_URL), nowMs: runtime.nowMs,
}));
