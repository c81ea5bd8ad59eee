/** What the inventory workload adds to local runs (`npm start`, the tests, the chaos run). */
import type { WorkloadLocal } from '@ballast-stack/ballast/local';
import { inventoryChaos } from './chaos.ts';
import { CARRIER_API_URL } from '../index.ts';
import { startCarrierApi } from './carrier-api.ts';
import { inventoryDemo } from './demo.ts';

export const local: WorkloadLocal = {
  chaos: inventoryChaos,
  demo: inventoryDemo,
  fakes: [{ setting: CARRIER_API_URL, description: 'carrier booking API fake, honours Idempotency-Key and X-Fencing-Token', start: () => startCarrierApi() }],
};

export default local;
