/**
 * Lambda entry point of the cache invalidator, fed by the state table's stream (NEW_AND_OLD_IMAGES,
 * ReportBatchItemFailures). Clients are created once per container from STATE_TABLE_NAME,
 * BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER and WORKER_VERSION.
 */
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';
import { WORKLOADS } from '../../workloads/registry.ts';
import { createInvalidator } from './invalidator.ts';

export const handler = createInvalidator(entityCacheFromEnv(workloadEntities(WORKLOADS)));
