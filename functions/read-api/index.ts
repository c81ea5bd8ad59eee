/**
 * Lambda entry point of the account read API (a Function URL: `GET /accounts/{id}`). Clients are
 * created once per container from STATE_TABLE_NAME, BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER and
 * WORKER_VERSION.
 */
import { accountCacheFromEnv } from '../../shared/cache/index.ts';
import { createReadApi } from './read-api.ts';

export const handler = createReadApi(accountCacheFromEnv());
