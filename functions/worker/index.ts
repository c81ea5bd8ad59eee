/**
 * Lambda entry point of the SQS worker. Clients and config are created once per container; the
 * handler is ballast's batch pipeline over the registered workloads' jobs (`workloads/registry.ts`).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { workerConfigFromEnv } from './config.ts';
import { createWorker } from './worker.ts';

export const handler = createWorker({
  config: workerConfigFromEnv(),
  documents: DynamoDBDocumentClient.from(new DynamoDBClient(awsClientConfig()), { marshallOptions: { removeUndefinedValues: true } }),
  sqs: new SQSClient(awsClientConfig()),
});
