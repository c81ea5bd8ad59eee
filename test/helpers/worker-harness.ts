import { before, after } from 'node:test';
import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type Message,
} from '@aws-sdk/client-sqs';
import { createEnvelope, type Envelope, type EnvelopeInput } from '../../shared/envelope/index.ts';
import { accountKey, PARTNER_API_URL, type Account } from '../../workloads/accounts/index.ts';
import { createLambdaContext } from '../../local/lambda/context.ts';
import { failedRecordIds, toSqsRecord } from '../../local/lambda/sqs-records.ts';
import { startWorkloadFakes, type ExternalApi, type RunningFakes } from '../../local/external-api/index.ts';
import { WORKLOADS } from '../../workloads/registry.ts';
import { CARRIER_API_URL } from '../../workloads/inventory/index.ts';
import { createWorker, type WorkerDependencies } from '../../functions/worker/worker.ts';
import type { WorkerConfig } from '../../functions/worker/config.ts';
import { useEngines } from './engines.ts';
import { createBallastTables } from './tables.ts';

type Handler = (event: SQSEvent, context: ReturnType<typeof createLambdaContext>) => Promise<SQSBatchResponse | void>;

export interface TestQueues {
  readonly url: string;
  readonly arn: string;
  readonly dlqUrl: string;
}

/**
 * Everything a worker integration test needs on the real engines: tables, the workloads' API fakes, a
 * DynamoDB client whose round trips are counted by an SDK middleware, fresh queues per test,
 * and a `deliver` that plays one Lambda invocation (receive → event → handler → delete).
 */
export function useWorkerHarness() {
  const local = useEngines();
  let fakes: RunningFakes;
  let tables: { state: string; control: string };
  let counted: DynamoDBClient;
  let documents: DynamoDBDocumentClient;
  let roundTrips = 0;

  before(async () => {
    fakes = await startWorkloadFakes(WORKLOADS);
    tables = await createBallastTables(local.dynamodb, `t${randomUUID().slice(0, 8)}`);
    counted = new DynamoDBClient({});
    counted.middlewareStack.add((next) => async (args) => {
      roundTrips += 1;
      return next(args);
    }, { step: 'finalizeRequest', name: 'countRoundTrips' });
    documents = DynamoDBDocumentClient.from(counted, { marshallOptions: { removeUndefinedValues: true } });
  });
  after(async () => {
    counted?.destroy();
    await fakes?.stop();
  });

  const harness = {
    get local() { return local; },
    get partner(): ExternalApi { return fakes.apis.get(PARTNER_API_URL) as ExternalApi; },
    get carrier(): ExternalApi { return fakes.apis.get(CARRIER_API_URL) as ExternalApi; },
    get tables() { return tables; },
    get documents() { return documents; },
    /** DynamoDB requests made through the worker's client since the last reset. */
    roundTrips: () => roundTrips,
    resetRoundTrips: () => void (roundTrips = 0),

    /** A source queue and its DLQ (same type), redrive after `maxReceiveCount`. */
    async queues(options: { fifo?: boolean; visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {}): Promise<TestQueues> {
      const suffix = options.fifo ? '.fifo' : '';
      const name = `q${randomUUID().slice(0, 8)}`;
      const fifoAttributes = options.fifo ? { FifoQueue: 'true' } : {};
      const dlq = await local.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq${suffix}`, Attributes: fifoAttributes }));
      const dlqArn = await queueArn(dlq.QueueUrl as string);
      const source = await local.sqs.send(new CreateQueueCommand({
        QueueName: `${name}${suffix}`,
        Attributes: {
          ...fifoAttributes,
          VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: options.maxReceiveCount ?? 5 }),
        },
      }));
      return { url: source.QueueUrl as string, arn: await queueArn(source.QueueUrl as string), dlqUrl: dlq.QueueUrl as string };
    },

    config(queues: TestQueues, overrides: Partial<WorkerConfig> = {}): WorkerConfig {
      return {
        stateTableName: tables.state,
        controlTableName: tables.control,
        deadLetterQueueUrl: queues.dlqUrl,
        settings: fakes.settings,
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

    worker(queues: TestQueues, overrides: Partial<Omit<WorkerDependencies, 'config'>> & { config?: Partial<WorkerConfig> } = {}): Handler {
      const { config, ...rest } = overrides;
      return createWorker({ documents, sqs: local.sqs, config: harness.config(queues, config), ...rest }) as unknown as Handler;
    },

    envelope(input: Partial<EnvelopeInput> & { resourceId: string }): Envelope {
      return createEnvelope({ type: 'account.credit', payload: { amount: 100 }, producerVersion: 'test', ...input });
    },

    async send(queues: TestQueues, body: Envelope | string, options: { groupId?: string } = {}): Promise<void> {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      await local.sqs.send(new SendMessageCommand({
        QueueUrl: queues.url,
        MessageBody: text,
        ...(options.groupId ? { MessageGroupId: options.groupId, MessageDeduplicationId: randomUUID() } : {}),
      }));
    },

    /** Receives up to `max` messages, waiting up to `waitSeconds` for the first. */
    async receive(queueUrl: string, max = 10, waitSeconds = 1): Promise<Message[]> {
      const out = await local.sqs.send(new ReceiveMessageCommand({
        QueueUrl: queueUrl, MaxNumberOfMessages: max, WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'],
      }));
      return out.Messages ?? [];
    },

    /**
     * One Lambda invocation the way the event source mapping does it: receive a batch, invoke with
     * a context whose remaining time counts down from `timeoutMs`, delete the records not reported
     * as failed. `crashAfterHandler` skips the deletion, as if the sandbox died before returning.
     */
    async deliver(queues: TestQueues, handler: Handler, options: { max?: number; timeoutMs?: number; crashAfterHandler?: boolean } = {}) {
      const messages = await harness.receive(queues.url, options.max ?? 10);
      const records = messages.map((message) => toSqsRecord(message, queues.arn, 'us-east-1'));
      if (records.length === 0) return { records, response: undefined, failed: new Set<string>() };
      const context = createLambdaContext({ functionName: 'worker', timeoutMs: options.timeoutMs ?? 30_000 });
      const response = await handler({ Records: records }, context);
      const failed = failedRecordIds(response, records, true);
      const done = records.filter((record) => !failed.has(record.messageId));
      if (!options.crashAfterHandler && done.length > 0) {
        await local.sqs.send(new DeleteMessageBatchCommand({
          QueueUrl: queues.url, Entries: done.map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
        }));
      }
      return { records, response, failed };
    },

    /**
     * Delivers batches until the queue has nothing visible, in flight or delayed. Bounded: throws
     * after `maxRounds` deliveries (an empty one waits up to a second for messages to reappear).
     */
    async drain(queues: TestQueues, handler: Handler, options: { max?: number; maxRounds?: number } = {}): Promise<number> {
      let invocations = 0;
      for (let round = 0; round < (options.maxRounds ?? 30); round += 1) {
        const { records } = await harness.deliver(queues, handler, { max: options.max });
        if (records.length > 0) {
          invocations += 1;
          continue;
        }
        const { Attributes = {} } = await local.sqs.send(new GetQueueAttributesCommand({
          QueueUrl: queues.url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
        }));
        if (Object.values(Attributes).every((value) => value === '0')) return invocations;
      }
      throw new Error(`queue ${queues.url} did not drain within ${options.maxRounds ?? 30} rounds`);
    },

    /** Every message in a DLQ with its ballast attributes (received, not deleted). */
    async deadLetters(queues: TestQueues): Promise<{ body: string; reason: string | undefined; attributes: Message['MessageAttributes'] }[]> {
      const found: Message[] = [];
      for (let round = 0; round < 20; round += 1) {
        const batch = await harness.receive(queues.dlqUrl, 10, 0);
        if (batch.length === 0) break;
        found.push(...batch);
      }
      return found.map((message) => ({
        body: message.Body ?? '',
        reason: message.MessageAttributes?.['ballast.reason']?.StringValue,
        attributes: message.MessageAttributes,
      }));
    },

    async account(accountId: string): Promise<Account | undefined> {
      const out = await local.documents.send(new GetCommand({ TableName: tables.state, Key: { pk: accountKey(accountId) }, ConsistentRead: true }));
      return out.Item as Account | undefined;
    },
  };

  async function queueArn(url: string): Promise<string> {
    const out = await local.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    return out.Attributes?.QueueArn as string;
  }

  return harness;
}
