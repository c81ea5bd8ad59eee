// A producer service: build jobs typed by the workload's schemas, send them in batches that retry
// only the failed entries.
import { SQSClient } from '@aws-sdk/client-sqs';
import { JobProducer } from '@ballast-stack/ballast/producer';
import { ORDER_JOB_TYPES } from '../../test/fixtures/consumer-app/src/orders/index.ts';

const producer = new JobProducer({
  sqs: new SQSClient({}),                    // normal credential, region and endpoint resolution
  queueUrl: process.env.JOBS_QUEUE_URL ?? '', // the stack output JobsQueueUrl
  catalog: ORDER_JOB_TYPES,                  // the job types it builds (or the registry's catalog)
  producerVersion: 'orders-web@1.4.2',
});

const { sent, failed } = await producer.send([
  producer.build('order.place', { resourceId: 'o-1', idempotencyKey: 'cart-7', payload: { total: 42 } }),
  producer.build('order.pay', { resourceId: 'o-1', idempotencyKey: 'checkout-7', payload: {} }),
]);
for (const job of failed) console.error(`${job.envelope.jobId}: ${job.code} ${job.message} after ${job.attempts} attempt(s)`);
console.log(`${sent.length} sent`);
