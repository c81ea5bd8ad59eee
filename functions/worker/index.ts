/**
 * The SQS worker's Lambda handler, for an app's registry: the stack's generated entry calls it
 * with the registry and every workload's handlers, so clients and config are created once per
 * container and the bundle holds exactly the app's job code.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig } from '../../shared/aws/index.ts';
import type { Registry, WorkloadJobs } from '../../shared/workloads/index.ts';
import { workerConfigFromEnv } from './config.ts';
import { createWorker } from './worker.ts';

export function workerHandler(registry: Registry, workloadJobs: readonly WorkloadJobs[]) {
  return createWorker({
    config: workerConfigFromEnv(process.env, registry.workloads),
    registry,
    workloadJobs,
    documents: DynamoDBDocumentClient.from(new DynamoDBClient(awsClientConfig()), { marshallOptions: { removeUndefinedValues: true } }),
    sqs: new SQSClient(awsClientConfig()),
  });
}
