/** What the account example adds to local runs (`npm start`, the tests, the chaos run). */
import type { WorkloadLocal } from '@ballast-stack/ballast/local';
import { accountChaos } from './chaos.ts';
import { PARTNER_API_URL } from '../index.ts';
import { accountDemo } from './demo.ts';
import { startPartnerApi } from './partner-api.ts';

export const local: WorkloadLocal = {
  chaos: accountChaos,
  demo: accountDemo,
  fakes: [{ setting: PARTNER_API_URL, description: 'partner profile API fake, honours Idempotency-Key and X-Fencing-Token', start: () => startPartnerApi() }],
};

export default local;
