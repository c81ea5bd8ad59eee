/**
 * The worker's CodeDeploy post-traffic hook against the local CloudWatch endpoint (over a
 * MetricsCollector fed the EMF documents the worker's Powertools metrics write) and the local
 * CodeDeploy endpoint, through the real SDK clients. Time is a fake clock the hook's sleep
 * advances, so a three-minute settle window takes milliseconds.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CloudWatchClient, GetMetricDataCommand, InvalidParameterValueException, type GetMetricDataCommandInput } from '@aws-sdk/client-cloudwatch';
import { CodeDeployClient, DeploymentDoesNotExistException, GetDeploymentCommand } from '@aws-sdk/client-codedeploy';
import {
  createPostTrafficCheck, IDLE_QUEUE_ADVICE, postTrafficCheckConfigFromEnv, REPORT_RESERVE_MS, type PostTrafficCheckConfig,
} from '../../functions/post-traffic-check/check.ts';
import { serveCloudWatch } from '../../local/cloud/cloudwatch-endpoint.ts';
import { serveCodeDeploy, type CodeDeployEndpoint } from '../../local/cloud/codedeploy-endpoint.ts';
import { MetricsCollector } from '../../local/cloud/metrics.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../local/engines/engine.ts';
import { createLambdaContext } from '../../local/lambda/context.ts';
import { createObservability, METRICS, MetricUnit } from '../../shared/observability/index.ts';

const NEW_VERSION = '0.1.0+newcode1';
const OLD_VERSION = '0.1.0+oldcode0';
const SERVICE = 'ballast-worker';
/** Mid-minute on purpose: the metrics window must start on the minute before it. */
const CREATE_TIME_MS = Date.UTC(2026, 7, 1, 12, 0, 37);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

/** What the worker's middleware does per record, then its publishStoredMetrics line, ingested. */
function workerEmits(metrics: MetricsCollector, workerVersion: string, counts: { processed?: number; duplicates?: number }): void {
  const observability = createObservability({ serviceName: SERVICE, workerVersion });
  for (let i = 0; i < (counts.processed ?? 0); i += 1) observability.metrics.addMetric(METRICS.processed, MetricUnit.Count, 1);
  for (let i = 0; i < (counts.duplicates ?? 0); i += 1) observability.metrics.addMetric(METRICS.duplicates, MetricUnit.Count, 1);
  metrics.ingest(JSON.stringify(observability.metrics.serializeMetrics()));
  observability.metrics.clearMetrics();
}

interface Harness {
  readonly metrics: MetricsCollector;
  readonly codeDeploy: CodeDeployEndpoint;
  readonly cloudWatchClient: CloudWatchClient;
  readonly codeDeployClient: CodeDeployClient;
  /** Every GetMetricData request the hook sent. */
  readonly metricReads: GetMetricDataCommandInput[];
  stopCloudWatch(): Promise<void>;
}

async function harness(): Promise<Harness> {
  const metrics = new MetricsCollector();
  const cloudWatch = await serveCloudWatch(metrics);
  const codeDeploy = await serveCodeDeploy();
  stops.push(() => cloudWatch.stop(), () => codeDeploy.stop());
  const client = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 };
  const cloudWatchClient = new CloudWatchClient({ ...client, endpoint: cloudWatch.url });
  const metricReads: GetMetricDataCommandInput[] = [];
  cloudWatchClient.middlewareStack.add((next) => async (args) => {
    metricReads.push(args.input as GetMetricDataCommandInput);
    return next(args);
  }, { step: 'initialize', name: 'recordMetricReads' });
  codeDeploy.registerDeployment({ deploymentId: 'd-NEW', createTimeMs: CREATE_TIME_MS });
  return {
    metrics, codeDeploy, cloudWatchClient, metricReads,
    codeDeployClient: new CodeDeployClient({ ...client, endpoint: codeDeploy.url }),
    stopCloudWatch: () => cloudWatch.stop(),
  };
}

/** A clock that only the hook's sleeps move; `onSleep` runs after each (e.g. late datapoints). */
function fakeTime(startMs: number, onSleep: (sleepNumber: number) => void = () => {}) {
  let now = startMs;
  const sleeps: number[] = [];
  return {
    sleeps,
    nowMs: () => now,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
      onSleep(sleeps.length);
    },
  };
}

async function runHook(h: Harness, options: {
  config?: Partial<PostTrafficCheckConfig>; time?: ReturnType<typeof fakeTime>; deploymentId?: string; timeoutMs?: number;
} = {}) {
  const config = { workerVersion: NEW_VERSION, serviceName: SERVICE, minRecords: 10, settleSeconds: 180, pollSeconds: 30, ...options.config };
  const time = options.time ?? fakeTime(CREATE_TIME_MS + 7 * 60_000 + 13_000);
  const lines: Record<string, unknown>[] = [];
  const hook = createPostTrafficCheck({
    codeDeploy: h.codeDeployClient, cloudWatch: h.cloudWatchClient, ...config, log: (line) => lines.push(line), nowMs: time.nowMs, sleep: time.sleep,
  });
  const executionId = `exec-${Math.random().toString(36).slice(2)}`;
  const context = createLambdaContext({ functionName: 'post-traffic-check', timeoutMs: options.timeoutMs ?? (config.settleSeconds + 60) * 1000, nowMs: time.nowMs });
  const answer = await hook({ DeploymentId: options.deploymentId ?? 'd-NEW', LifecycleEventHookExecutionId: executionId }, context);
  const reported = await h.codeDeploy.statusOf(executionId, 1_000);
  return { answer, reported, lines, sleeps: time.sleeps };
}

describe('post-traffic check: promotes a worker version only after it handled enough records', () => {
  it('reports Succeeded at once when the new version handled enough records (processed + duplicates suppressed)', async () => {
    // GIVEN the new version completed 6 records and answered 4 duplicates
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 6, duplicates: 4 });
    // WHEN the hook runs with a threshold of 10
    const { answer, reported, lines, sleeps } = await runHook(h);
    // THEN CodeDeploy hears Succeeded, without waiting
    assert.equal(answer.status, 'Succeeded');
    assert.deepEqual({ ...reported }, { deploymentId: 'd-NEW', lifecycleEventHookExecutionId: reported.lifecycleEventHookExecutionId, status: 'Succeeded' });
    assert.deepEqual(sleeps, []);
    assert.equal(lines.length, 1);
    assert.deepEqual({ verdict: lines[0]?.verdict, count: lines[0]?.count, minRecords: lines[0]?.minRecords, level: lines[0]?.level },
      { verdict: 'Succeeded', count: 10, minRecords: 10, level: 'INFO' });
  });

  it('reads one whole-minute period from the deployment\'s start minute to now, by service and workerVersion, summed', async () => {
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 10 });
    const time = fakeTime(CREATE_TIME_MS + 7 * 60_000 + 13_000);
    await runHook(h, { time });
    assert.equal(h.metricReads.length, 1);
    const read = h.metricReads[0]!;
    const startMs = read.StartTime!.getTime();
    const endMs = read.EndTime!.getTime();
    assert.equal(startMs, Date.UTC(2026, 7, 1, 12, 0, 0));
    assert.equal(endMs, Date.UTC(2026, 7, 1, 12, 8, 0), 'now (12:07:50) rounded up to the minute');
    for (const query of read.MetricDataQueries ?? []) {
      assert.equal(query.MetricStat?.Period, (endMs - startMs) / 1000);
      assert.equal(query.MetricStat?.Stat, 'Sum');
      assert.deepEqual(query.MetricStat?.Metric?.Dimensions, [{ Name: 'service', Value: SERVICE }, { Name: 'workerVersion', Value: NEW_VERSION }]);
    }
    assert.deepEqual(read.MetricDataQueries?.map((q) => q.MetricStat?.Metric?.MetricName), [METRICS.processed, METRICS.duplicates]);
  });

  it('keeps re-reading while too few records show, and reports Succeeded when late datapoints arrive in the settle window', async () => {
    // GIVEN 3 records so far, and 9 more whose EMF datapoints land after the second poll
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 3 });
    const time = fakeTime(CREATE_TIME_MS + 6 * 60_000, (n) => {
      if (n === 2) workerEmits(h.metrics, NEW_VERSION, { processed: 7, duplicates: 2 });
    });
    // WHEN the hook runs
    const { answer, reported, lines, sleeps } = await runHook(h, { time });
    // THEN it waited two polls, then promoted
    assert.equal(answer.status, 'Succeeded');
    assert.equal(reported.status, 'Succeeded');
    assert.deepEqual(sleeps, [30_000, 30_000]);
    assert.equal(h.metricReads.length, 3);
    assert.deepEqual({ count: lines[0]?.count, reads: lines[0]?.reads, waitedSeconds: lines[0]?.waitedSeconds }, { count: 12, reads: 3, waitedSeconds: 60 });
  });

  it('reports Failed after the whole settle window with too few records, telling the operator what to do on an idle queue', async () => {
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 2 });
    const { answer, reported, lines, sleeps } = await runHook(h);
    assert.equal(answer.status, 'Failed');
    assert.equal(reported.status, 'Failed');
    // Six polls of 30 s cover the 180 s settle window: seven reads in all.
    assert.deepEqual(sleeps, [30_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
    assert.equal(h.metricReads.length, 7);
    assert.equal(lines.length, 1);
    const line = lines[0]!;
    assert.deepEqual({ level: line.level, verdict: line.verdict, count: line.count, minRecords: line.minRecords, workerVersion: line.workerVersion },
      { level: 'ERROR', verdict: 'Failed', count: 2, minRecords: 10, workerVersion: NEW_VERSION });
    assert.ok(String(line.message).includes(IDLE_QUEUE_ADVICE), String(line.message));
    assert.match(String(line.message), /the queue was idle during the canary: send traffic and redeploy, or deploy with -c canaryMinRecords=0 to promote on the readiness check alone/);
  });

  it('does not count the records of another worker version', async () => {
    // GIVEN the previous version handled plenty, the new one only 1
    const h = await harness();
    workerEmits(h.metrics, OLD_VERSION, { processed: 50, duplicates: 20 });
    workerEmits(h.metrics, NEW_VERSION, { processed: 1 });
    const { answer, reported, lines } = await runHook(h, { config: { settleSeconds: 60 } });
    assert.equal(answer.status, 'Failed');
    assert.equal(reported.status, 'Failed');
    assert.equal(lines[0]?.count, 1);
  });

  it('never waits past the invocation\'s remaining time, less the time kept to report', async () => {
    // GIVEN a function timeout (90 s) shorter than the settle window (180 s) + 60 s
    const h = await harness();
    const { answer, reported, sleeps } = await runHook(h, { timeoutMs: 90_000 });
    // THEN it stops polling with REPORT_RESERVE_MS left, and still reports
    assert.equal(answer.status, 'Failed');
    assert.equal(reported.status, 'Failed');
    assert.equal(sleeps.reduce((a, b) => a + b, 0), 90_000 - REPORT_RESERVE_MS);
    assert.deepEqual(sleeps, [30_000, 30_000]);
  });

  it('reports Failed when the deployment cannot be read', async () => {
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 20 });
    const { answer, reported, lines, sleeps } = await runHook(h, { deploymentId: 'd-UNKNOWN' });
    assert.equal(answer.status, 'Failed');
    assert.deepEqual({ deploymentId: reported.deploymentId, status: reported.status }, { deploymentId: 'd-UNKNOWN', status: 'Failed' });
    assert.deepEqual(sleeps, []);
    assert.equal(lines[0]?.level, 'ERROR');
    assert.match(String(lines[0]?.error), /DeploymentDoesNotExist/);
  });

  it('reports Failed when CloudWatch cannot be read', async () => {
    const h = await harness();
    workerEmits(h.metrics, NEW_VERSION, { processed: 20 });
    await h.stopCloudWatch();
    const { answer, reported, lines, sleeps } = await runHook(h);
    assert.equal(answer.status, 'Failed');
    assert.equal(reported.status, 'Failed');
    assert.deepEqual(sleeps, []);
    assert.equal(lines[0]?.level, 'ERROR');
    assert.match(String(lines[0]?.message), /could not read/);
  });
});

describe('post-traffic check: configuration', () => {
  it('reads the environment with its defaults', () => {
    assert.deepEqual(postTrafficCheckConfigFromEnv({ TARGET_WORKER_VERSION: NEW_VERSION, MIN_RECORDS: '25' }),
      { workerVersion: NEW_VERSION, serviceName: 'ballast-worker', minRecords: 25, settleSeconds: 180, pollSeconds: 30 });
    assert.deepEqual(postTrafficCheckConfigFromEnv({
      TARGET_WORKER_VERSION: NEW_VERSION, TARGET_SERVICE_NAME: 'other-worker', MIN_RECORDS: '1', SETTLE_SECONDS: '0', POLL_SECONDS: '5',
    }), { workerVersion: NEW_VERSION, serviceName: 'other-worker', minRecords: 1, settleSeconds: 0, pollSeconds: 5 });
  });

  it('fails naming every missing variable', () => {
    assert.throws(() => postTrafficCheckConfigFromEnv({}), (error: Error) => {
      assert.match(error.message, /TARGET_WORKER_VERSION is required/);
      assert.match(error.message, /MIN_RECORDS is required/);
      return true;
    });
  });

  it('fails naming every malformed variable', () => {
    assert.throws(() => postTrafficCheckConfigFromEnv({
      TARGET_WORKER_VERSION: NEW_VERSION, MIN_RECORDS: '0', SETTLE_SECONDS: 'soon', POLL_SECONDS: '2.5',
    }), (error: Error) => {
      assert.match(error.message, /MIN_RECORDS must be an integer from 1, got '0'/);
      assert.match(error.message, /SETTLE_SECONDS must be an integer from 0 to 840, got 'soon'/);
      assert.match(error.message, /POLL_SECONDS must be an integer from 1, got '2.5'/);
      return true;
    });
    assert.throws(() => postTrafficCheckConfigFromEnv({ TARGET_WORKER_VERSION: NEW_VERSION, MIN_RECORDS: '3', SETTLE_SECONDS: '841' }), /SETTLE_SECONDS must be an integer from 0 to 840, got '841'/);
  });

  it('fails at cold start: the entry point does not load with a missing variable', async () => {
    // A query string loads the entry point afresh, as a new container would.
    const entry = new URL('../../functions/post-traffic-check/index.ts', import.meta.url).href;
    const saved = { TARGET_WORKER_VERSION: process.env.TARGET_WORKER_VERSION, MIN_RECORDS: process.env.MIN_RECORDS };
    delete process.env.TARGET_WORKER_VERSION;
    delete process.env.MIN_RECORDS;
    try {
      await assert.rejects(import(`${entry}?cold-start=missing`), /TARGET_WORKER_VERSION is required; MIN_RECORDS is required/);
      process.env.TARGET_WORKER_VERSION = NEW_VERSION;
      process.env.MIN_RECORDS = '5';
      const loaded = (await import(`${entry}?cold-start=complete`)) as { handler: unknown };
      assert.equal(typeof loaded.handler, 'function');
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('refuses a threshold below 1 when built in code', async () => {
    const h = await harness();
    assert.throws(() => createPostTrafficCheck({
      codeDeploy: h.codeDeployClient, cloudWatch: h.cloudWatchClient, workerVersion: NEW_VERSION, serviceName: SERVICE, minRecords: 0, settleSeconds: 180, pollSeconds: 30,
    }), /minRecords must be an integer from 1, got 0/);
  });
});

describe('local CodeDeploy and CloudWatch endpoints: what the post-traffic check relies on', () => {
  it('GetDeployment answers a registered deployment\'s createTime, and DeploymentDoesNotExistException otherwise', async () => {
    const h = await harness();
    const out = await h.codeDeployClient.send(new GetDeploymentCommand({ deploymentId: 'd-NEW' }));
    assert.equal(out.deploymentInfo?.createTime?.getTime(), CREATE_TIME_MS);
    assert.equal(out.deploymentInfo?.deploymentId, 'd-NEW');
    assert.equal(out.deploymentInfo?.computePlatform, 'Lambda');
    await assert.rejects(h.codeDeployClient.send(new GetDeploymentCommand({ deploymentId: 'd-NONE' })), (error) => error instanceof DeploymentDoesNotExistException);
  });

  it('GetMetricData refuses a period that is not a multiple of 60 s, or a window that ends before it starts, as CloudWatch does', async () => {
    const h = await harness();
    const query = (period: number) => [{ Id: 'm0', MetricStat: { Metric: { Namespace: 'Ballast', MetricName: METRICS.processed }, Period: period, Stat: 'Sum' } }];
    const window = { StartTime: new Date(CREATE_TIME_MS), EndTime: new Date(CREATE_TIME_MS + 600_000) };
    await assert.rejects(h.cloudWatchClient.send(new GetMetricDataCommand({ ...window, MetricDataQueries: query(90) })),
      (error) => error instanceof InvalidParameterValueException && /Period/.test(error.message));
    await assert.rejects(h.cloudWatchClient.send(new GetMetricDataCommand({ StartTime: window.EndTime, EndTime: window.StartTime, MetricDataQueries: query(60) })),
      (error) => error instanceof InvalidParameterValueException);
    const ok = await h.cloudWatchClient.send(new GetMetricDataCommand({ ...window, MetricDataQueries: query(600) }));
    assert.equal(ok.MetricDataResults?.[0]?.StatusCode, 'Complete');
  });
});
