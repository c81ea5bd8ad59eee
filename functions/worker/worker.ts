import middy, { type MiddlewareObj } from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { sqsJobBatch, type JobHandler } from '../../shared/batch/index.ts';
import { cacheConnectionOptions } from '../../shared/cache/index.ts';
import { envelopeChecks, pingCache, readinessProbe, type CachePingTarget, type ReadinessCheck } from '../../shared/readiness/index.ts';
import { IdempotencyStore } from '../../shared/idempotency/index.ts';
import { createObservability, type Observability } from '../../shared/observability/index.ts';
import type { WorkerConfig } from './config.ts';
import { jobResources, workloadJobs, type Registry, type WorkloadJobs } from '../../shared/workloads/index.ts';

export interface WorkerDependencies {
  readonly config: WorkerConfig;
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** @default - Powertools logger and metrics stamped with `config.workerVersion` */
  readonly observability?: Observability;
  /** The app's workloads: their job types' declarations (the resources each touches) and settings. */
  readonly registry: Pick<Registry, 'workloads' | 'catalog'>;
  /** Each workload's handlers (the default exports of their `jobs` modules). @default [] */
  readonly workloadJobs?: readonly WorkloadJobs[];
  /** Handlers to run instead of the workloads' (tests). @default - built from {@link workloadJobs} */
  readonly jobs?: readonly JobHandler[];
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/** Composes the SQS worker: Middy + ballast's batch pipeline over the registered workloads' jobs. */
export function createWorker(deps: WorkerDependencies) {
  const { config } = deps;
  const store = new IdempotencyStore({
    documents: deps.documents,
    tableName: config.controlTableName,
    leaseMs: config.leaseMs,
    retentionSeconds: config.idempotencyRetentionSeconds,
    nowMs: deps.nowMs,
  });
  const jobs = deps.jobs ?? workloadJobs(deps.registry.workloads, deps.workloadJobs ?? [], {
    stateTableName: config.stateTableName,
    documents: deps.documents,
    setting: (name) => {
      const value = config.settings[name];
      if (value === undefined) throw new Error(`worker configuration: ${name} is required`);
      return value;
    },
    nowMs: deps.nowMs,
  });
  // Once per container, like the cache-using functions' client (and its IAM token source).
  const cache: CachePingTarget | undefined = config.cacheUrl
    ? cacheConnectionOptions({ cacheUrl: config.cacheUrl, cacheCluster: config.cacheCluster ?? false, cacheAuth: config.cacheAuth ?? { mode: 'none' } })
    : undefined;
  return middy<SQSEvent, SQSBatchResponse>()
    .use(readinessProbe(() => readinessChecks(deps, cache)) as unknown as MiddlewareObj<SQSEvent, SQSBatchResponse>)
    .use(sqsJobBatch({
    jobs,
    store,
    sqs: deps.sqs,
    deadLetterQueueUrl: config.deadLetterQueueUrl,
    observability: deps.observability ?? createObservability({ workerVersion: config.workerVersion }),
    maxReceiveCount: config.maxReceiveCount,
    concurrency: config.concurrency,
    resourcesOf: (envelope) => jobResources(deps.registry.catalog, envelope),
    deadlineMarginMs: config.deadlineMarginMs,
    maxLockWaitSeconds: config.maxLockWaitSeconds,
    backoff: { baseSeconds: config.retryBaseDelaySeconds },
    nowMs: deps.nowMs,
  }));
}

/** What a new version must reach and parse before it takes traffic. */
function readinessChecks(deps: WorkerDependencies, cache: CachePingTarget | undefined): ReadinessCheck[] {
  const { config } = deps;
  const table = (name: string, tableName: string): ReadinessCheck => ({
    name,
    run: async () => void (await deps.documents.send(new GetCommand({ TableName: tableName, Key: { pk: 'readiness#probe' } }))),
  });
  return [
    table('dynamodb state table', config.stateTableName),
    table('dynamodb control table', config.controlTableName),
    {
      name: 'sqs dead-letter queue',
      run: async () => void (await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: config.deadLetterQueueUrl, AttributeNames: ['QueueArn'] }))),
    },
    ...(cache ? [{ name: 'cache', run: () => pingCache(cache) }] : []),
    ...envelopeChecks(),
  ];
}
