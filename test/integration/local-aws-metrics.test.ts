import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import type { MetricIdentity } from '../../local/cloudwatch/index.ts';
import { useLocalCloud } from '../helpers/engines.ts';
import { waitFor, waitForEmptyQueue } from '../helpers/wait.ts';

/** The queue sampler records its counts every 10 s (time scale 1). */
const SAMPLED_WITHIN_MS = 25_000;

describe('local cloud: the AWS metrics its dashboard draws', () => {
  const { local, cloud } = useLocalCloud();
  const jobs = 12;
  const bodies = Array.from({ length: jobs }, (_, i) => JSON.stringify(createEnvelope({
    type: 'account.credit', resourceId: `acc-metrics-${i}`, idempotencyKey: `metrics-${i}`, payload: { amount: 1 },
  })));
  /** One message carries an attribute, which SQS counts in its size: name, type and value. */
  const attribute = { name: 'origin', dataType: 'String', value: 'metrics-test' };

  const sum = (identity: MetricIdentity) => cloud.metrics.series.values(identity).reduce((a, b) => a + b, 0);
  const sqsMetric = (name: string, queueName: string): MetricIdentity => ({ namespace: 'AWS/SQS', name, dimensions: { QueueName: queueName } });
  const jobsQueue = () => {
    const queue = cloud.resources.queues.find((q) => q.url === cloud.resources.outputs.JobsQueueUrl);
    assert.ok(queue, 'the jobs queue');
    return queue;
  };

  /** Sends the jobs (a batch of ten, then one by one) and waits, bounded, until the worker has processed them all. */
  async function processJobs(): Promise<void> {
    const queueUrl = cloud.resources.outputs.JobsQueueUrl as string;
    await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: bodies.slice(0, 10).map((body, i) => ({ Id: String(i), MessageBody: body })) }));
    for (const [i, body] of bodies.slice(10).entries()) {
      await local.sqs.send(new SendMessageCommand({
        QueueUrl: queueUrl, MessageBody: body,
        ...(i === 0 ? { MessageAttributes: { [attribute.name]: { DataType: attribute.dataType, StringValue: attribute.value } } } : {}),
      }));
    }
    await waitForEmptyQueue(local.sqs, queueUrl);
  }

  it('AWS/SQS by QueueName: messages sent, received and deleted, their sizes and the age of the oldest', async () => {
    await processJobs();
    const { name } = jobsQueue();
    await waitFor('the deletes to be sampled', () => sum(sqsMetric('NumberOfMessagesDeleted', name)) >= jobs, SAMPLED_WITHIN_MS, 100);
    assert.equal(sum(sqsMetric('NumberOfMessagesSent', name)), jobs, 'every send, batched or not, and nothing else');
    assert.ok(sum(sqsMetric('NumberOfMessagesReceived', name)) >= jobs);
    assert.equal(sum(sqsMetric('NumberOfMessagesDeleted', name)), jobs, 'each job deleted once, by the mapping');
    const sizes = cloud.metrics.series.values(sqsMetric('SentMessageSize', name)).sort((a, b) => a - b);
    const attributeBytes = attribute.name.length + attribute.dataType.length + attribute.value.length;
    const expected = bodies.map((body, i) => Buffer.byteLength(body) + (i === 10 ? attributeBytes : 0)).sort((a, b) => a - b);
    assert.deepEqual(sizes, expected, 'one datapoint per message: its body and attributes in bytes');
    const ages = cloud.metrics.series.values(sqsMetric('ApproximateAgeOfOldestMessage', name));
    assert.ok(ages.length > 0 && ages.every((age) => Number.isInteger(age) && age >= 0), `ages: ${ages.join(',')}`);

    // A message nobody consumes (the dead-letter queue has no mapping) ages from its send.
    const deadLetters = cloud.resources.queues.find((q) => q.url === cloud.resources.outputs.JobsDeadLetterQueueUrl);
    assert.ok(deadLetters);
    await local.sqs.send(new SendMessageCommand({ QueueUrl: deadLetters.url, MessageBody: bodies[0] as string }));
    const oldest = sqsMetric('ApproximateAgeOfOldestMessage', deadLetters.name);
    await waitFor('the dead letter to age', () => cloud.metrics.series.values(oldest).some((age) => age >= 1), SAMPLED_WITHIN_MS, 100);
    assert.equal(sum(sqsMetric('NumberOfMessagesReceived', deadLetters.name)), 0);
  });

  it('AWS/Lambda by FunctionName and by its alias: Throttles 0 and ConcurrentExecutions within the mapping\'s concurrency', () => {
    const worker = cloud.resources.functions.find((fn) => fn.logicalId.startsWith('WorkerFunction'));
    assert.ok(worker);
    const mapping = cloud.resources.mappings.find((m) => m.functionName === worker.name);
    assert.ok(mapping);
    const maximumConcurrency = (mapping.properties.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency;
    const dimensionSets: Record<string, string>[] = [{ FunctionName: worker.name }, { FunctionName: worker.name, Resource: `${worker.name}:live` }];
    for (const dimensions of dimensionSets) {
      const lambda = (name: string): MetricIdentity => ({ namespace: 'AWS/Lambda', name, dimensions });
      const invocations = cloud.metrics.series.values(lambda('Invocations')).length;
      assert.ok(invocations >= 1, JSON.stringify(dimensions));
      assert.deepEqual(cloud.metrics.series.values(lambda('Throttles')), Array(invocations).fill(0), 'one 0 per invocation');
      const concurrency = cloud.metrics.series.values(lambda('ConcurrentExecutions'));
      assert.equal(concurrency.length, invocations);
      assert.ok(concurrency.every((busy) => busy >= 1 && busy <= maximumConcurrency), `${JSON.stringify(dimensions)}: ${concurrency.join(',')}`);
    }
    assert.equal(cloud.metrics.series.identities('AWS/Lambda', 'ProvisionedConcurrencySpilloverInvocations').length, 0, 'no provisioned concurrency locally');
  });

  it('event source mapping counts by EventSourceMappingUUID alone, for the SQS and the stream mapping', async () => {
    await cloud.streamsIdle(15_000);
    for (const metric of ['PolledEventCount', 'InvokedEventCount', 'FailedInvokeEventCount', 'FilteredOutEventCount']) {
      for (const identity of cloud.metrics.series.identities('AWS/Lambda', metric)) {
        assert.deepEqual(Object.keys(identity.dimensions), ['EventSourceMappingUUID'], metric);
      }
    }
    const counts = (uuid: string, name: string) => sum({ namespace: 'AWS/Lambda', name, dimensions: { EventSourceMappingUUID: uuid } });
    const worker = cloud.resources.mappings.find((m) => m.eventSourceArn === jobsQueue().arn);
    assert.ok(worker);
    assert.match(worker.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const invoked = counts(worker.uuid, 'InvokedEventCount');
    assert.ok(counts(worker.uuid, 'PolledEventCount') >= invoked, 'every event invoked was polled first');
    assert.ok(invoked >= jobs);
    assert.equal(invoked - counts(worker.uuid, 'FailedInvokeEventCount'), jobs, 'each job succeeded once');
    assert.equal(counts(worker.uuid, 'DeletedEventCount'), jobs);
    assert.equal(counts(worker.uuid, 'FilteredOutEventCount'), 0);
    const pollsOf = (uuid: string) => cloud.metrics.series.values({ namespace: 'AWS/Lambda', name: 'PolledEventCount', dimensions: { EventSourceMappingUUID: uuid } });
    assert.ok(pollsOf(worker.uuid).includes(0), 'an empty poll counts 0');

    const stream = cloud.resources.mappings.find((m) => cloud.resources.tables.some((table) => table.streamArn === m.eventSourceArn));
    assert.ok(stream);
    assert.notEqual(stream.uuid, worker.uuid);
    assert.ok(pollsOf(stream.uuid).length > 0, 'the stream mapping reports its reads');
    assert.ok(counts(stream.uuid, 'PolledEventCount') >= counts(stream.uuid, 'InvokedEventCount'));
    assert.equal(cloud.metrics.series.identities('AWS/Lambda', 'DeletedEventCount')
      .filter((identity) => identity.dimensions.EventSourceMappingUUID === stream.uuid).length, 0, 'a stream deletes nothing');
  });
});
