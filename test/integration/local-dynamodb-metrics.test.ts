import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { localClientConfig } from '../../local/engines/index.ts';
import { widgetData, type MetricIdentity, type MetricWidgetProperties } from '../../local/cloudwatch/index.ts';
import { useLocalCloud } from '../helpers/engines.ts';
import { waitForEmptyQueue } from '../helpers/wait.ts';


describe('local cloud: AWS/DynamoDB metrics from the functions\' own requests', () => {
  const { local, cloud } = useLocalCloud();
  const jobs = 8;

  const table = (prefix: string) => {
    const found = cloud.resources.tables.find((t) => t.logicalId.startsWith(prefix));
    assert.ok(found, `the stack's ${prefix} table`);
    return found.name;
  };
  const dynamoDb = (name: string, dimensions: Record<string, string>): MetricIdentity => ({ namespace: 'AWS/DynamoDB', name, dimensions });
  const sum = (identity: MetricIdentity) => cloud.metrics.series.values(identity).reduce((a, b) => a + b, 0);
  const sumAll = (name: string) => cloud.metrics.series.identities('AWS/DynamoDB', name).reduce((total, identity) => total + sum(identity), 0);
  /** Where the functions send their DynamoDB requests (`AWS_ENDPOINT_URL_DYNAMODB` in their environment). */
  const functionsEndpoint = () => {
    const [runtime] = cloud.runtimes.values();
    assert.ok(runtime);
    return runtime.options.environment.AWS_ENDPOINT_URL_DYNAMODB as string;
  };

  /** Sends the jobs in one batch and waits, bounded, until the worker has processed them all. */
  async function processJobs(): Promise<void> {
    const queueUrl = cloud.resources.outputs.JobsQueueUrl as string;
    await local.sqs.send(new SendMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: Array.from({ length: jobs }, (_, i) => ({
        Id: String(i),
        MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: `acc-ddb-metrics-${i}`, idempotencyKey: `ddb-metrics-${i}`, payload: { amount: 1 } })),
      })),
    }));
    await waitForEmptyQueue(local.sqs, queueUrl);
  }

  it('consumed write units and latency per operation for the state and the control table; no system errors, no throttles', async () => {
    await processJobs();
    for (const name of [table('TablesState'), table('TablesControl')]) {
      assert.ok(sum(dynamoDb('ConsumedWriteCapacityUnits', { TableName: name })) > 0, `${name}: write units consumed`);
      const latencies = cloud.metrics.series.values(dynamoDb('SuccessfulRequestLatency', { TableName: name, Operation: 'TransactWriteItems' }));
      // (one sample per transaction: the batch's jobs share one or a few, by group commit)
      assert.ok(latencies.length >= 1 && latencies.length <= jobs, `${name}: a TransactWriteItems sample per transaction, got ${latencies.length}`);
      assert.ok(latencies.every((ms) => ms > 0 && ms < 10_000), `${name}: ${latencies.join(',')}`);
    }
    for (const name of ['SuccessfulRequestLatency', 'SystemErrors']) {
      for (const identity of cloud.metrics.series.identities('AWS/DynamoDB', name)) {
        assert.deepEqual(Object.keys(identity.dimensions).sort(), ['Operation', 'TableName'], name);
      }
    }
    for (const name of ['ConsumedReadCapacityUnits', 'ConsumedWriteCapacityUnits', 'ReadThrottleEvents', 'WriteThrottleEvents']) {
      for (const identity of cloud.metrics.series.identities('AWS/DynamoDB', name)) assert.deepEqual(Object.keys(identity.dimensions), ['TableName'], name);
    }
    assert.equal(sumAll('SystemErrors'), 0);
    assert.equal(sumAll('ReadThrottleEvents') + sumAll('WriteThrottleEvents'), 0);
  });

  it('a caller gets the answer it asked for: ConsumedCapacity only when it asked; both requests measured', async () => {
    const endpoint = functionsEndpoint();
    assert.notEqual(endpoint, local.engines.dynamodb.endpoint, 'the functions\' requests pass the measuring hop');
    const client = new DynamoDBClient(localClientConfig(endpoint));
    const TableName = table('TablesControl');
    const scans = dynamoDb('SuccessfulRequestLatency', { TableName, Operation: 'Scan' });
    const before = cloud.metrics.series.values(scans).length;
    try {
      const plain = await client.send(new ScanCommand({ TableName, Limit: 1 }));
      assert.equal(plain.ConsumedCapacity, undefined);
      const asked = await client.send(new ScanCommand({ TableName, Limit: 1, ReturnConsumedCapacity: 'TOTAL' }));
      assert.equal(asked.ConsumedCapacity?.TableName, TableName);
      assert.ok((asked.ConsumedCapacity?.CapacityUnits ?? 0) > 0);
    } finally {
      client.destroy();
    }
    assert.equal(cloud.metrics.series.values(scans).length, before + 2);
    assert.ok(sum(dynamoDb('ConsumedReadCapacityUnits', { TableName })) > 0);
  });

  it('the dashboard\'s DynamoDB usage and latency widgets draw lines with datapoints', () => {
    const dashboard = cloud.resources.dashboards.find((d) => 'body' in d);
    assert.ok(dashboard && 'body' in dashboard, 'the stack\'s dashboard resolved');
    const widgets = (dashboard.body.widgets as { type: string; properties: MetricWidgetProperties & { title?: string } }[])
      .filter((widget) => widget.type === 'metric' && JSON.stringify(widget.properties.metrics).includes('AWS/DynamoDB'));
    const nowMs = cloud.metrics.clock();
    const window = { startMs: nowMs - 10 * 60_000, endMs: nowMs + 60_000, periodSeconds: 60 };
    for (const title of ['Write Usage', 'Latency (Average)']) {
      const drawn = widgets.filter((widget) => widget.properties.title === title);
      assert.equal(drawn.length, 2, `a ${title} widget per table`);
      for (const widget of drawn) {
        const data = widgetData(widget.properties, cloud.metrics.series, window);
        assert.deepEqual(data.errors, [], title);
        assert.ok(data.lines.some((line) => line.points.some(([, value]) => value > 0)), `${title}: ${JSON.stringify(data.lines)}`);
      }
    }
  });
});
