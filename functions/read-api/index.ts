/**
 * Lambda entry point of the read API (a Function URL: `GET /<route>/{id}` for every registered
 * cached entity with a route). Clients are created once per container from STATE_TABLE_NAME,
 * BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER, BALLAST_CACHE_AUTH and WORKER_VERSION.
 */
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';
import { WORKLOADS } from '../../workloads/registry.ts';
import { createReadApi } from './read-api.ts';

export const handler = createReadApi(entityCacheFromEnv(workloadEntities(WORKLOADS)));
