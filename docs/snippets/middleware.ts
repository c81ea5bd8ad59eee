// A worker of your own composed from ballast's pieces: Middy plus the batch pipeline over the
// registry's jobs (what BallastStack's worker runs, without its readiness probe).
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createObservability, IdempotencyStore, jobResources, sqsJobBatch, workloadJobs } from '@ballast-stack/ballast';
import { registry } from '../../test/fixtures/consumer-app/src/registry.ts';
import orders from '../../test/fixtures/consumer-app/src/orders/jobs.ts';

// Once per container: the clients, and the handlers built with the settings they read.
const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const sqs = new SQSClient({});
const env = (name: string) => process.env[name] ?? '';

export const handler = middy<SQSEvent, SQSBatchResponse>().use(sqsJobBatch({
  jobs: workloadJobs(registry.workloads, [orders], { stateTableName: env('STATE_TABLE_NAME'), documents, setting: env }),
  // The resources each job type declares: lanes within a batch, and the locks of an external job's claim.
  resourcesOf: (envelope) => jobResources(registry.catalog, envelope),
  store: new IdempotencyStore({ documents, tableName: env('CONTROL_TABLE_NAME') }),
  sqs,
  deadLetterQueueUrl: env('DEAD_LETTER_QUEUE_URL'),
  observability: createObservability({ workerVersion: env('WORKER_VERSION') }),
}));
