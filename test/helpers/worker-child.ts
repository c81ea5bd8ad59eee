/**
 * A worker in its own process, for crash and pause tests: it receives one batch and runs it with
 * the real worker, except that every external job (any workload's) prints SIDE_EFFECT_DONE after
 * its external call and then holds for `holdMs` before committing — long enough for the parent to SIGKILL it
 * (a crash between claim and commit) or SIGSTOP it (a holder paused past its lease).
 * Input: JSON in BALLAST_TEST_WORKER = { queues, config, holdMs }. Output: lines on stdout.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { createWorker } from '../../functions/worker/worker.ts';
import { workloadJobs } from '../../shared/workloads/index.ts';
import { loadWorkloadJobs } from '../../shared/workloads/load.ts';
import { registry } from '../fixtures/workloads/registry.ts';
import type { WorkerConfig } from '../../functions/worker/config.ts';
import type { ExternalJob, JobHandler } from '../../shared/batch/index.ts';
import { createLambdaContext } from '../../local/lambda/context.ts';
import { failedRecordIds, toSqsRecord } from '../../local/lambda/sqs-records.ts';
import type { TestQueues } from './worker-harness.ts';

const { queues, config, holdMs } = JSON.parse(process.env.BALLAST_TEST_WORKER ?? '{}') as { queues: TestQueues; config: WorkerConfig; holdMs: number };
const say = (line: string) => process.stdout.write(`${line}\n`);

const sqs = new SQSClient({});
const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const runtime = { stateTableName: config.stateTableName, documents, setting: (name: string) => config.settings[name] ?? '' };
const jobs: JobHandler[] = workloadJobs(registry.workloads, await loadWorkloadJobs(registry.workloads), runtime).map((job) => {
  if (job.effects !== 'external') return job;
  const held: ExternalJob<unknown> = {
    ...job,
    async perform(context) {
      const plan = await job.perform(context);
      say('SIDE_EFFECT_DONE');
      await new Promise((resolve) => setTimeout(resolve, holdMs));
      return plan;
    },
  };
  return held;
});

const handler = createWorker({ config, documents, sqs, registry, jobs });
const received = await sqs.send(new ReceiveMessageCommand({
  QueueUrl: queues.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 5, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'],
}));
const records = (received.Messages ?? []).map((message) => toSqsRecord(message, queues.arn, 'us-east-1'));
say(`RECEIVED ${records.length}`);
const response = (await handler({ Records: records }, createLambdaContext({ functionName: 'worker-child', timeoutMs: 60_000 }))) as SQSBatchResponse;
const failed = failedRecordIds(response, records, true);
const done = records.filter((record) => !failed.has(record.messageId));
if (done.length > 0) {
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queues.url, Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })) }));
}
say(`RESPONSE ${JSON.stringify(response)}`);
process.exit(0);
