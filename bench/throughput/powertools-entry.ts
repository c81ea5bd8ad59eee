/**
 * The Powertools stack's Lambda entry, built like ballast's worker for the bundle comparison:
 * Middy, the Powertools idempotency, batch, logger and metrics packages, and DynamoDB and SQS
 * clients created the way `functions/worker/index.ts` creates them.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { powertools } from './variants/powertools.ts';

const dynamodb = new DynamoDBClient(awsClientConfig());
export const handler = powertools({
  dynamodb,
  documents: DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
  sqs: new SQSClient(awsClientConfig()),
  env: process.env,
});
