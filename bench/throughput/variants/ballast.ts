import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sqsJobBatch } from '../../../shared/batch/index.ts';
import { IdempotencyStore } from '../../../shared/idempotency/index.ts';
import { createObservability } from '../../../shared/observability/index.ts';
import { creditJob } from '../../../workloads/accounts/jobs/balance.ts';
import { required, type BatchHandler, type Variant } from './types.ts';

/**
 * ballast as a team composes it for one job type, like the Powertools variant: Middy, the batch
 * pipeline (`sqsJobBatch`), the idempotency store on the control table, and the accounts
 * workload's credit job. The deployed worker (`functions/worker`) is this plus every registered
 * workload and the readiness probe; its bundle is measured too.
 */
export const ballast: Variant = ({ documents, sqs, env }) => {
  const number = (name: string, fallback: number) => Number(env[name] ?? fallback);
  return middy<SQSEvent, SQSBatchResponse>().use(sqsJobBatch({
    jobs: [creditJob({ stateTableName: required(env, 'STATE_TABLE_NAME') })],
    store: new IdempotencyStore({ documents, tableName: required(env, 'CONTROL_TABLE_NAME') }),
    sqs,
    deadLetterQueueUrl: required(env, 'DEAD_LETTER_QUEUE_URL'),
    observability: createObservability({ workerVersion: env.WORKER_VERSION ?? 'bench' }),
    maxReceiveCount: number('MAX_RECEIVE_COUNT', 5),
    deadlineMarginMs: number('DEADLINE_MARGIN_MS', 5_000),
    backoff: { baseSeconds: number('RETRY_BASE_DELAY_SECONDS', 2) },
  })) as unknown as BatchHandler;
};
