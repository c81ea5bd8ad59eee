/**
 * The read API's Lambda handler (a Function URL: `GET /<route>/{id}` for every cached entity of
 * the registry's workloads with a route). The stack's generated entry calls it once per container;
 * clients come from STATE_TABLE_NAME, BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER, BALLAST_CACHE_AUTH
 * and WORKER_VERSION.
 */
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities, type Registry } from '../../shared/workloads/index.ts';
import { createReadApi } from './read-api.ts';

export function readApiHandler(registry: Registry) {
  return createReadApi(entityCacheFromEnv(workloadEntities(registry.workloads)));
}
