/**
 * The invalidation repair's Lambda handler, fed by the cache invalidator's on-failure queue (SQS,
 * ReportBatchItemFailures), for the registry's cached entities. The stack's generated entry calls
 * it once per container: the cache from STATE_TABLE_NAME, BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER
 * and WORKER_VERSION, the streams client from the standard AWS environment, with timeouts derived
 * from BALLAST_FUNCTION_TIMEOUT_MS.
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities, type Registry } from '../../shared/workloads/index.ts';
import { createInvalidationRepair } from './repair.ts';

export function repairHandler(registry: Registry) {
  return createInvalidationRepair({ ...entityCacheFromEnv(workloadEntities(registry.workloads)), streams: new DynamoDBStreamsClient(awsClientConfig()) });
}
