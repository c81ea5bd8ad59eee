import middy from '@middy/core';
import type { SQSRecord } from 'aws-lambda';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import * as z from 'zod';
import { creditCommand } from './credit-update.ts';
import { required, type BatchHandler, type Variant } from './types.ts';

/**
 * The same worker as AWS Powertools' documentation composes it: Middy with the Powertools logger
 * and metrics, `BatchProcessor` for partial batch responses, `makeIdempotent` keyed by the
 * envelope's idempotency key on its DynamoDB persistence layer (in progress → effect → completed),
 * the payload validated with the same rules in classic zod. Its persistence table is the control table
 * (`pk` as its key attribute).
 */
/** The credit's payload as a Powertools user writes it (classic zod, as `@aws-lambda-powertools/parser` takes). */
const CREDIT = z.object({ amount: z.number().int().positive().max(1_000_000_000), expectedVersion: z.number().int().nonnegative().optional() });

export const powertools: Variant = ({ dynamodb, documents, env }) => {
  const state = required(env, 'STATE_TABLE_NAME');
  const logger = new Logger({ serviceName: 'bench' });
  const metrics = new Metrics({ serviceName: 'bench', namespace: 'Bench' });
  const processor = new BatchProcessor(EventType.SQS);
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'powertools_json(body).idempotencyKey' });
  const credit = makeIdempotent(async (record: SQSRecord) => {
    const { resourceId, payload } = JSON.parse(record.body) as { resourceId: string; payload: unknown };
    const { amount } = CREDIT.parse(payload);
    await documents.send(creditCommand(state, resourceId, amount));
    metrics.addMetric('JobsProcessed', MetricUnit.Count, 1);
    return { accountId: resourceId, credited: amount };
  }, {
    persistenceStore: new DynamoDBPersistenceLayer({ tableName: required(env, 'CONTROL_TABLE_NAME'), keyAttr: 'pk', awsSdkV3Client: dynamodb }),
    config,
  });
  return middy(async (event: Parameters<BatchHandler>[0], context: Parameters<BatchHandler>[1]) => {
    config.registerLambdaContext(context);
    return processPartialResponse(event, credit, processor, { context, throwOnFullBatchFailure: false });
  }).use(injectLambdaContext(logger)).use(logMetrics(metrics)) as unknown as BatchHandler;
};
