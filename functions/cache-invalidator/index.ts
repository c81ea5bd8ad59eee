/**
 * The cache invalidator's Lambda handler, fed by the state table's stream (NEW_AND_OLD_IMAGES,
 * ReportBatchItemFailures), for the registry's cached entities. The stack's generated entry calls
 * it once per container; clients come from STATE_TABLE_NAME, BALLAST_CACHE_URL,
 * BALLAST_CACHE_CLUSTER and WORKER_VERSION.
 */
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities, type Registry } from '../../shared/workloads/index.ts';
import { createInvalidator } from './invalidator.ts';

export function invalidatorHandler(registry: Registry) {
  return createInvalidator(entityCacheFromEnv(workloadEntities(registry.workloads)));
}
