/**
 * Lambda entry point of the invalidation repair, fed by the cache invalidator's on-failure queue
 * (SQS, ReportBatchItemFailures). Clients are created once per container: the cache from
 * STATE_TABLE_NAME, BALLAST_CACHE_URL, BALLAST_CACHE_CLUSTER and WORKER_VERSION, the streams client
 * from the standard AWS environment, with timeouts derived from BALLAST_FUNCTION_TIMEOUT_MS.
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { entityCacheFromEnv } from '../../shared/cache/index.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';
import { WORKLOADS } from '../../workloads/registry.ts';
import { createInvalidationRepair } from './repair.ts';

export const handler = createInvalidationRepair({ ...entityCacheFromEnv(workloadEntities(WORKLOADS)), streams: new DynamoDBStreamsClient(awsClientConfig()) });
