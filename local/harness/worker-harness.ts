import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient, type Message,
} from '@aws-sdk/client-sqs';
import { createEnvelope, type Envelope, type EnvelopeInput } from '../../shared/envelope/index.ts';
import type { Registry, WorkloadJobs } from '../../shared/workloads/index.ts';
import { loadWorkloadJobs } from '../../shared/workloads/load.ts';
import { STATE_TABLE } from '../../shared/tables/index.ts';
import { createWorker, type WorkerDependencies } from '../../functions/worker/worker.ts';
import type { WorkerConfig } from '../../functions/worker/config.ts';
import { createLambdaContext } from '../lambda/context.ts';
import { failedRecordIds, toSqsRecord } from '../lambda/sqs-records.ts';
import { startWorkloadFakes, type ExternalApi, type RunningFakes } from '../external-api/index.ts';
import { localClientConfig, startEngines, type EngineEndpoints, type LocalEngines } from '../engines/index.ts';
import { createBallastTables } from './tables.ts';

/** The worker's Lambda handler as a test calls it. */
export type WorkerTestHandler = (event: SQSEvent, context: ReturnType<typeof createLambdaContext>) => Promise<SQSBatchResponse | void>;

export interface TestQueues {
  readonly url: string;
  readonly arn: string;
  readonly dlqUrl: string;
}

export interface WorkerHarnessOptions {
  /** The app's workloads: the worker runs their jobs, their `local` fakes answer their settings. */
  readonly registry: Registry;
  /** Engines already running (shared by a suite). @default - its own DynamoDB Local, fauxqs and redis-server, stopped by `stop()` */
  readonly engines?: EngineEndpoints;
  /** Settings over the fakes' URLs (e.g. one with no fake). @default {} */
  readonly settings?: Readonly<Record<string, string>>;
}

/** What {@link startWorkerHarness} gives a workload's tests. */
export interface WorkerHarness {
  readonly engines: EngineEndpoints;
  readonly tables: { readonly state: string; readonly control: string };
  /** The worker's DynamoDB client (its round trips counted). */
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** Every workload fake, by the setting it answers. */
  readonly fakes: RunningFakes;
  /** The fake answering one setting, e.g. `api('PAYMENTS_API_URL').calls`. */
  api(setting: string): ExternalApi;
  /** DynamoDB requests made through {@link documents} since the last reset. */
  roundTrips(): number;
  resetRoundTrips(): void;
  /** A fresh source queue and its DLQ (same type), redrive after `maxReceiveCount`. */
  queues(options?: { fifo?: boolean; visibilityTimeoutSeconds?: number; maxReceiveCount?: number }): Promise<TestQueues>;
  /** The worker's settings for `queues` as the stack would set them. */
  config(queues: TestQueues, overrides?: Partial<WorkerConfig>): WorkerConfig;
  /** The worker as deployed (ballast's pipeline over the registry's jobs), for `queues`. */
  worker(queues: TestQueues, overrides?: Partial<Omit<WorkerDependencies, 'config'>> & { config?: Partial<WorkerConfig> }): WorkerTestHandler;
  /** An envelope as a producer builds it (producer version `test`). */
  envelope(input: Partial<EnvelopeInput> & Pick<EnvelopeInput, 'type' | 'resourceId'>): Envelope;
  send(queues: TestQueues, body: Envelope | string, options?: { groupId?: string }): Promise<void>;
  /** Receives up to `max` messages, waiting up to `waitSeconds` for the first. */
  receive(queueUrl: string, max?: number, waitSeconds?: number): Promise<Message[]>;
  /**
   * One Lambda invocation the way the event source mapping does it: receive a batch, invoke with a
   * context whose remaining time counts down from `timeoutMs`, delete the records not reported as
   * failed. `crashAfterHandler` skips the deletion, as if the sandbox died before returning.
   */
  deliver(queues: TestQueues, handler: WorkerTestHandler, options?: { max?: number; timeoutMs?: number; crashAfterHandler?: boolean }): Promise<{
    records: ReturnType<typeof toSqsRecord>[]; response: SQSBatchResponse | void | undefined; failed: Set<string>;
  }>;
  /** Delivers batches until the queue has nothing visible, in flight or delayed; throws after `maxRounds` deliveries. */
  drain(queues: TestQueues, handler: WorkerTestHandler, options?: { max?: number; maxRounds?: number }): Promise<number>;
  /** Every message in a DLQ with its ballast reason (received, not deleted). */
  deadLetters(queues: TestQueues): Promise<{ body: string; reason: string | undefined; attributes: Message['MessageAttributes'] }[]>;
  /** An item of the state table by its key (`entityKey(...)` or the workload's own), read consistently. */
  item<T = Record<string, unknown>>(key: string): Promise<T | undefined>;
  /** Stops the fakes, the clients and the engines it started. */
  stop(): Promise<void>;
}

/**
 * A worker under test on the real engines, for a team's workload tests: fresh tables, the
 * workloads' API fakes, the registry's jobs loaded from their modules, and Lambda's delivery
 * played by `deliver` and `drain`.
 *
 * @example
 * const h = await startWorkerHarness({ registry });
 * const queues = await h.queues();
 * await h.send(queues, h.envelope({ type: 'order.place', resourceId: 'o-1', payload: { total: 5 } }));
 * await h.drain(queues, h.worker(queues));
 * await h.stop();
 */
export async function startWorkerHarness(options: WorkerHarnessOptions): Promise<WorkerHarness> {
  const own: LocalEngines | undefined = options.engines ? undefined : await startEngines();
  const engines = options.engines ?? (own as LocalEngines);
  const jobs: WorkloadJobs[] = await loadWorkloadJobs(options.registry.workloads);
  const fakes = await startWorkloadFakes(options.registry.workloads);
  const settings = { ...fakes.settings, ...options.settings };
  const dynamodb = new DynamoDBClient(localClientConfig(engines.dynamodb.endpoint));
  const tables = await createBallastTables(dynamodb, `t${randomUUID().slice(0, 8)}`);
  let roundTrips = 0;
  const counted = new DynamoDBClient(localClientConfig(engines.dynamodb.endpoint));
  counted.middlewareStack.add((next) => async (args) => {
    roundTrips += 1;
    return next(args);
  }, { step: 'finalizeRequest', name: 'countRoundTrips' });
  const documents = DynamoDBDocumentClient.from(counted, { marshallOptions: { removeUndefinedValues: true } });
  const reader = DynamoDBDocumentClient.from(dynamodb);
  const sqs = new SQSClient(localClientConfig(engines.sqs.endpoint));
  const queueArn = async (url: string) => (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn as string;

  const harness: WorkerHarness = {
    engines, tables, documents, sqs, fakes,
    api(setting) {
      const api = fakes.apis.get(setting);
      if (!api) throw new Error(`no fake answers ${setting}: declare one in its workload's local module (fakes)`);
      return api;
    },
    roundTrips: () => roundTrips,
    resetRoundTrips: () => void (roundTrips = 0),

    async queues(queueOptions = {}) {
      const suffix = queueOptions.fifo ? '.fifo' : '';
      const name = `q${randomUUID().slice(0, 8)}`;
      const fifoAttributes = queueOptions.fifo ? { FifoQueue: 'true' } : {};
      const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq${suffix}`, Attributes: fifoAttributes }));
      const dlqArn = await queueArn(dlq.QueueUrl as string);
      const source = await sqs.send(new CreateQueueCommand({
        QueueName: `${name}${suffix}`,
        Attributes: {
          ...fifoAttributes,
          VisibilityTimeout: String(queueOptions.visibilityTimeoutSeconds ?? 30),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: queueOptions.maxReceiveCount ?? 5 }),
        },
      }));
      return { url: source.QueueUrl as string, arn: await queueArn(source.QueueUrl as string), dlqUrl: dlq.QueueUrl as string };
    },

    config(queues, overrides = {}) {
      return {
        stateTableName: tables.state,
        controlTableName: tables.control,
        deadLetterQueueUrl: queues.dlqUrl,
        settings,
        workerVersion: 'test-1',
        maxReceiveCount: 5,
        leaseMs: 30_000,
        idempotencyRetentionSeconds: 3600,
        concurrency: 10,
        deadlineMarginMs: 1_000,
        retryBaseDelaySeconds: 1,
        maxLockWaitSeconds: 3_600,
        ...overrides,
      };
    },

    worker(queues, overrides = {}) {
      const { config, ...rest } = overrides;
      return createWorker({
        documents, sqs, registry: options.registry, workloadJobs: jobs, config: harness.config(queues, config), ...rest,
      }) as unknown as WorkerTestHandler;
    },

    envelope: (input) => createEnvelope({ payload: {}, producerVersion: 'test', ...input }),

    async send(queues, body, sendOptions = {}) {
      await sqs.send(new SendMessageCommand({
        QueueUrl: queues.url,
        MessageBody: typeof body === 'string' ? body : JSON.stringify(body),
        ...(sendOptions.groupId ? { MessageGroupId: sendOptions.groupId, MessageDeduplicationId: randomUUID() } : {}),
      }));
    },

    async receive(queueUrl, max = 10, waitSeconds = 1) {
      const out = await sqs.send(new ReceiveMessageCommand({
        QueueUrl: queueUrl, MaxNumberOfMessages: max, WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'],
      }));
      return out.Messages ?? [];
    },

    async deliver(queues, handler, deliverOptions = {}) {
      const messages = await harness.receive(queues.url, deliverOptions.max ?? 10);
      const records = messages.map((message) => toSqsRecord(message, queues.arn, 'us-east-1'));
      if (records.length === 0) return { records, response: undefined, failed: new Set<string>() };
      const context = createLambdaContext({ functionName: 'worker', timeoutMs: deliverOptions.timeoutMs ?? 30_000 });
      const response = await handler({ Records: records }, context);
      const failed = failedRecordIds(response, records, true);
      const done = records.filter((record) => !failed.has(record.messageId));
      if (!deliverOptions.crashAfterHandler && done.length > 0) {
        await sqs.send(new DeleteMessageBatchCommand({
          QueueUrl: queues.url, Entries: done.map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
        }));
      }
      return { records, response, failed };
    },

    async drain(queues, handler, drainOptions = {}) {
      let invocations = 0;
      for (let round = 0; round < (drainOptions.maxRounds ?? 30); round += 1) {
        const { records } = await harness.deliver(queues, handler, { max: drainOptions.max });
        if (records.length > 0) {
          invocations += 1;
          continue;
        }
        const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({
          QueueUrl: queues.url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
        }));
        if (Object.values(Attributes).every((value) => value === '0')) return invocations;
      }
      throw new Error(`queue ${queues.url} did not drain within ${drainOptions.maxRounds ?? 30} rounds`);
    },

    async deadLetters(queues) {
      const found: Message[] = [];
      for (let round = 0; round < 20; round += 1) {
        const batch = await harness.receive(queues.dlqUrl, 10, 0);
        if (batch.length === 0) break;
        found.push(...batch);
      }
      return found.map((message) => ({
        body: message.Body ?? '', reason: message.MessageAttributes?.['ballast.reason']?.StringValue, attributes: message.MessageAttributes,
      }));
    },

    async item<T>(key: string) {
      const out = await reader.send(new GetCommand({ TableName: tables.state, Key: { [STATE_TABLE.partitionKey]: key }, ConsistentRead: true }));
      return out.Item as T | undefined;
    },

    async stop() {
      await fakes.stop();
      counted.destroy();
      dynamodb.destroy();
      sqs.destroy();
      await own?.stop();
    },
  };
  return harness;
}
