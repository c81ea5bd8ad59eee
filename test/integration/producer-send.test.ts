import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { JobProducer } from '../../shared/producer/index.ts';
import { JOB_CATALOG } from '../fixtures/workloads/registry.ts';
import { useEngines } from '../helpers/engines.ts';

describe('producer SDK against fauxqs', () => {
  const local = useEngines();

  it('sends to a FIFO queue with group = resource and deduplication = idempotency key', async () => {
    const queueUrl = (await local.sqs.send(new CreateQueueCommand({ QueueName: 'producer-jobs.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl ?? '';
    const producer = new JobProducer({ sqs: local.sqs, queueUrl, catalog: JOB_CATALOG, producerVersion: 'test@1' });
    const first = producer.build('account.credit', { resourceId: 'acc-1', idempotencyKey: 'same-intent', payload: { amount: 1 } });
    const resend = producer.build('account.credit', { resourceId: 'acc-1', idempotencyKey: 'same-intent', payload: { amount: 1 } });
    const other = producer.build('account.credit', { resourceId: 'acc-2', idempotencyKey: 'other-intent', payload: { amount: 2 } });
    const result = await producer.send([first, resend, other]);
    assert.equal(result.failed.length, 0);
    const out = await local.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'] }));
    const messages = out.Messages ?? [];
    assert.deepEqual(messages.map((m) => JSON.parse(m.Body ?? '{}').idempotencyKey).sort(), ['other-intent', 'same-intent'], 'SQS dropped the re-send of the same intent');
    assert.deepEqual(messages.map((m) => m.Attributes?.MessageGroupId).sort(), ['acc-1', 'acc-2']);
    assert.equal(JSON.parse(messages[0]?.Body ?? '{}').producerVersion, 'test@1');
  });

  it('reports entries SQS refuses as sender faults without retrying them', async () => {
    const queueUrl = (await local.sqs.send(new CreateQueueCommand({ QueueName: 'producer-plain' }))).QueueUrl ?? '';
    const producer = new JobProducer({ sqs: local.sqs, queueUrl: `${queueUrl}-missing`, catalog: JOB_CATALOG, maxAttempts: 3, retryBaseDelayMs: 1 });
    const result = await producer.send([producer.build('account.sync-profile', { resourceId: 'acc-1', payload: {} })]);
    assert.equal(result.sent.length, 0);
    assert.equal(result.failed.length, 1);
    assert.equal(result.failed[0]?.senderFault, true);
    assert.equal(result.failed[0]?.attempts, 1);
  });
});
