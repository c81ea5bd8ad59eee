/**
 * ballast's Lambda entry for the one job the Powertools entry runs (`powertools-entry.ts`), with
 * the clients created the same way, for the bundle comparison like for like.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { ballast } from './variants/ballast.ts';

const dynamodb = new DynamoDBClient(awsClientConfig());
export const handler = ballast({
  dynamodb,
  documents: DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
  sqs: new SQSClient(awsClientConfig()),
  env: process.env,
});
