import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CloudWatchClient, DescribeAlarmsCommand } from '@aws-sdk/client-cloudwatch';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { serveCloudWatch } from '../../local/cloud/cloudwatch-endpoint.ts';
import { LocalAlarms, sampleQueueMetrics, type AlarmTransition } from '../../local/cloudwatch/index.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/engines/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { useLocalCloud } from '../helpers/engines.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('local cloud: the stack\'s own CloudWatch alarms, evaluated against the local metrics', () => {
  const { local, cloud } = useLocalCloud();

  it('reads every alarm of the template; a burst of duplicates trips the duplicate-rate alarm, and DescribeAlarms shows it', async () => {
    assert.ok(cloud.alarms.statuses().length >= 20, `${cloud.alarms.statuses().length} alarms`);
    assert.deepEqual(cloud.alarms.statuses().filter((alarm) => /not evaluated locally/.test(alarm.reason)).map((alarm) => alarm.name), [],
      'every alarm of the shipped stack is computed locally');
    // GIVEN one credit delivered 30 times: 1 processed, 29 duplicates suppressed (97 % > 20 %)
    const body = JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-alarm', idempotencyKey: 'dup-burst', payload: { amount: 1 } }));
    const queueUrl = cloud.resources.outputs.JobsQueueUrl as string;
    for (let batch = 0; batch < 3; batch += 1) {
      await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), MessageBody: body })) }));
    }
    for (let i = 0; i < 120; i += 1) {
      const depth = await queueCounts(local.sqs, queueUrl);
      if (depth.visible + depth.inFlight + depth.delayed === 0 && cloud.metrics.total('DuplicatesSuppressed') >= 29) break;
      await sleep(500);
    }
    // WHEN the alarms are evaluated once the current 5-minute period has completed
    const transitions: AlarmTransition[] = [];
    const later = new LocalAlarms({ alarms: cloud.resources.alarms, series: cloud.metrics.series, nowMs: () => Date.now() + 300_000, onTransition: (t) => transitions.push(t) });
    later.evaluate();
    // THEN the duplicate-rate alarm is in ALARM, saying why; the others stay quiet
    const duplicates = later.statuses().find((alarm) => /Duplicate/i.test(alarm.name));
    assert.equal(duplicates?.state, 'ALARM', JSON.stringify(later.statuses().map((a) => [a.name, a.state, a.reason])));
    assert.match(duplicates?.reason ?? '', /1 of the last 1 datapoints \[9[0-9](\.\d+)?\] GreaterThan/);
    assert.ok(transitions.some((t) => t.name === duplicates?.name && t.to === 'ALARM'));
    // AND Lambda's own metrics are there: the per-version error-rate alarm of the worker sees this minute's invocations
    const worker = cloud.resources.functions.find((fn) => fn.logicalId.startsWith('WorkerFunction'));
    assert.deepEqual(worker?.aliases, ['live']);
    const invocations = cloud.metrics.series.stat({
      metric: { namespace: 'AWS/Lambda', name: 'Invocations', dimensions: { FunctionName: worker?.name ?? '', Resource: `${worker?.name}:live`, ExecutedVersion: '1' } },
      stat: 'Sum', periodSeconds: 3600, startMs: Date.now() - 3_600_000, endMs: Date.now() + 1,
    });
    assert.ok([...invocations.values()].reduce((a, b) => a + b, 0) >= 1, 'the worker\'s invocations are counted under its alias and version');
    const nextMinute = new LocalAlarms({ alarms: cloud.resources.alarms, series: cloud.metrics.series, nowMs: () => Date.now() + 60_000 });
    nextMinute.evaluate();
    const errors = nextMinute.statuses().find((alarm) => alarm.logicalId.startsWith('WorkerErrorsAlarm'));
    assert.equal(errors?.state, 'OK', errors?.reason);
    assert.match(errors?.reason ?? '', /\[[^\]]*\b0\b[^\]]*\]/, 'a computed datapoint, not only missing ones');
    // AND the read API's answers are counted by class, as a Function URL's are
    const read = await fetch(`${cloud.resources.outputs.ReadApiUrl}accounts/acc-alarm`);
    await read.arrayBuffer();
    const readApi = cloud.resources.urls[0]?.functionName ?? '';
    const urlCount = (name: string) => [...cloud.metrics.series.stat({
      metric: { namespace: 'AWS/Lambda', name, dimensions: { FunctionName: readApi } }, stat: 'Sum', periodSeconds: 3600, startMs: Date.now() - 3_600_000, endMs: Date.now() + 1,
    }).values()].reduce((a, b) => a + b, 0);
    assert.deepEqual([read.status, urlCount('UrlRequestCount'), urlCount('Url5xxCount')], [200, 1, 0]);
    // AND the invalidator's stream mapping reports its iterator age
    await cloud.streamsIdle(30_000);
    const invalidator = cloud.resources.mappings.find((mapping) => mapping.eventSourceArn.includes('/stream/'))?.functionName ?? '';
    assert.ok(cloud.metrics.series.identities('AWS/Lambda', 'IteratorAge').some((identity) => identity.dimensions.FunctionName === invalidator), invalidator);
    // AND the local CloudWatch endpoint serves it as DescribeAlarms does
    const endpoint = await serveCloudWatch(cloud.metrics, 0, later);
    const client = new CloudWatchClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: endpoint.url });
    try {
      const alarmed = await client.send(new DescribeAlarmsCommand({ StateValue: 'ALARM' }));
      assert.deepEqual(alarmed.MetricAlarms?.map((alarm) => alarm.AlarmName), [duplicates?.name]);
      assert.match(alarmed.MetricAlarms?.[0]?.StateReason ?? '', /GreaterThan/);
    } finally {
      client.destroy();
      await endpoint.stop();
    }
  });

  it('samples the queues into AWS/SQS: a dead letter puts the DLQ-size alarm in ALARM', async () => {
    const { outputs } = cloud.resources;
    await local.sqs.send(new SendMessageCommand({ QueueUrl: outputs.JobsQueueUrl, MessageBody: 'not an envelope' }));
    for (let i = 0; i < 60 && (await queueCounts(local.sqs, outputs.JobsDeadLetterQueueUrl as string)).visible === 0; i += 1) await sleep(500);
    const sampler = sampleQueueMetrics({ sqs: local.sqs, queues: cloud.resources.queues, series: cloud.metrics.series, intervalMs: 60_000 });
    try {
      await sampler.sample();
    } finally {
      sampler.stop();
    }
    const nextMinute = new LocalAlarms({ alarms: cloud.resources.alarms, series: cloud.metrics.series, nowMs: () => Date.now() + 60_000 });
    nextMinute.evaluate();
    const dlq = cloud.resources.queues.find((queue) => queue.url === outputs.JobsDeadLetterQueueUrl);
    const alarmed = nextMinute.statuses().filter((alarm) => alarm.state === 'ALARM').map((alarm) => alarm.name);
    assert.ok(alarmed.some((name) => /DeadLetter|DLQ/i.test(name)), `${dlq?.name}: alarms in ALARM ${JSON.stringify(alarmed)}`);
  });
});
