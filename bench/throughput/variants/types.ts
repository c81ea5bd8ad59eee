import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';

/** What every variant is built from: the same clients (instrumented by the bench) and environment. */
export interface VariantDependencies {
  readonly dynamodb: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** STATE_TABLE_NAME, CONTROL_TABLE_NAME, DEAD_LETTER_QUEUE_URL and the worker's other settings. */
  readonly env: NodeJS.ProcessEnv;
}

export type BatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/** One contender: a Lambda handler for the same SQS batches of `account.credit` envelopes. */
export type Variant = (deps: VariantDependencies) => BatchHandler;

export function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`bench variant: ${name} is required`);
  return value;
}
