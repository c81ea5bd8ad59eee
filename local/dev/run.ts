/**
 * `ballast dev`: a team's own CDK app (the `app` of its `cdk.json`) synthesized with `-c env=local`
 * and run on local engines — DynamoDB Local, fauxqs, redis-server — with the fakes its workloads
 * declare, the console and, with `demo`, their demo traffic; a live account of what runs where.
 *
 * Ctrl-C (or SIGTERM) drains gracefully: polling stops, in-flight invocations finish (unfinished
 * messages reappear later), then the engines stop and the process exits 0.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { engineEnvironment, LOCAL_CREDENTIALS, LOCAL_REGION, startEngines } from '../engines/index.ts';
import { startWorkloadFakes, type RunningFakes } from '../external-api/index.ts';
import { serveConsoleOf } from '../console/index.ts';
import type { LocalEndpoint } from '../http.ts';
import { refusalMessage } from '../iam/authorizer.ts';
import { startLocalCloud, type LocalCloud } from '../cloud/index.ts';
import { synthesize } from '../cloud/assembly.ts';
import { runDemo } from '../demo/run.ts';
import { demoWorkload } from '../demo/workload.ts';
import { removeLocalCloudFile, writeLocalCloudFile } from '../../shared/discovery/index.ts';
import { TRACES_URL_VARIABLE } from '../../shared/operations/traces.ts';
import { loadRegistry } from '../../shared/workloads/load.ts';
import type { Registry } from '../../shared/workloads/index.ts';
import { registerProcessTracing } from '../tracing/process.ts';
import { startDynamoDbFaultProxy } from '../faults/index.ts';

export interface DevOptions {
  /** The CDK project (its `cdk.json`). @default process.cwd() */
  readonly appDir?: string;
  /** Extra `-c` context for the synth besides `env=local`. @default {} */
  readonly context?: Record<string, unknown>;
  /** Demo traffic from the workloads' `local.demo`; none without it. @default - no demo */
  readonly demo?: { readonly jobs: number; readonly durationMs: number };
  /** @default 0 */
  readonly crashRate?: number;
  /** @default 0 */
  readonly timeoutRate?: number;
  /** The console's port. @default 0 - a free one, printed */
  readonly consolePort?: number;
  /** Authorize the functions' calls as AWS would (see `LocalCloudOptions.enforceIam`). @default true */
  readonly enforceIam?: boolean;
  /** Stop (as on Ctrl-C) once the demo is done. @default false */
  readonly exitAfterDemo?: boolean;
  /** @default - stdout */
  readonly log?: (line: string) => void;
}

/** Runs the app locally until a signal; resolves never (the process exits on shutdown). */
export async function runDev(options: DevOptions = {}): Promise<never> {
  const log = options.log ?? ((line = '') => void process.stdout.write(`${line}\n`));
  const startedAtMs = Date.now();
  const since = () => `${((Date.now() - startedAtMs) / 1000).toFixed(1)}s`;

  log('ballast local cloud');
  // The engines start while the app synthesizes: both take seconds, neither needs the other.
  log(`[${since()}] synthesizing the CDK app (${options.appDir ?? process.cwd()}, -c env=local) and bundling its functions ...`);
  const synthesis = synthesize({ appDir: options.appDir, context: { env: 'local', ...options.context } });
  synthesis.catch(() => undefined); // awaited below, after the engines
  log(`[${since()}] starting engines: DynamoDB Local (java), fauxqs (in-process), redis-server ...`);
  const engines = await startEngines();
  log(`  dynamodb  ${engines.dynamodb.endpoint}  (DynamoDB Local + Streams, in memory, pid ${engines.dynamodb.pid})`);
  log(`  sqs       ${engines.sqs.endpoint}  (fauxqs, in this process)`);
  log(`  redis     ${engines.redis.endpoint}  (redis-server, no persistence, pid ${engines.redis.pid})`);
  const refuse = async (message: string): Promise<never> => {
    log(`ballast dev: ${message}`);
    await engines.stop();
    process.exit(1);
  };
  let stacks;
  try {
    stacks = await synthesis;
  } catch (error) {
    return refuse((error as Error).message);
  }
  log(`[${since()}] synthesized`);
  const [stack, ...others] = stacks;
  if (!stack || others.length > 0) {
    return refuse(`the app synthesized ${stacks.length} stacks; give it one per environment (ballast dev runs exactly one)`);
  }
  if (!stack.registry) {
    return refuse(`stack ${stack.stackName} has no BallastStack (no ${'ballast:registry'} metadata): nothing to run`);
  }
  const registry: Registry = await loadRegistry(stack.registry);

  log(`[${since()}] workloads: ${registry.workloads.map((workload) => workload.name).join(', ')} (${stack.registry})`);
  let fakes: RunningFakes;
  try {
    fakes = await startWorkloadFakes(registry.workloads);
  } catch (error) {
    return refuse(`a workload's fake did not start: ${(error as Error).message}`);
  }
  for (const [setting, api] of fakes.apis) log(`  fake      ${api.url}  ${setting} (${api.description})`);
  // DynamoDB Local runs two transactions on one item one after the other and both succeed; the
  // service cancels the later with TransactionConflict. The functions go through this emulation of
  // it, so what conflicts on AWS conflicts here (no drawn faults; the CLI and the console read the
  // engine directly).
  const conflicts = await startDynamoDbFaultProxy({ target: engines.dynamodb.endpoint, transactionConflicts: true });
  log(`  conflicts ${conflicts.endpoint}  (the functions' way to DynamoDB: cancels a transaction meeting another in progress on an item, as DynamoDB does and DynamoDB Local does not)`);

  let cloud: LocalCloud | undefined;
  let consoleEndpoint: LocalEndpoint | undefined;
  let shuttingDown = false;
  const shutdown = async (signal: string): Promise<never> => {
    if (!shuttingDown) {
      shuttingDown = true;
      log(`\n${signal}: draining — polling stopped, letting in-flight invocations finish ...`);
      await consoleEndpoint?.stop();
      await cloud?.stop({ graceMs: 10_000 }).catch((error: unknown) => log(`  (cloud stop: ${String(error)})`));
      removeLocalCloudFile();
      await fakes.stop();
      await conflicts.stop();
      log('stopping engines ...');
      await engines.stop();
      log('stopped cleanly.');
      process.exit(0);
    }
    return new Promise<never>(() => undefined);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  // The demo producer runs in this process: its spans join the functions' in the local span store.
  registerProcessTracing({ serviceName: 'demo-producer' });
  try {
    log(`[${since()}] creating the stack's resources ...`);
    cloud = await startLocalCloud({
      engines,
      stack,
      // A setting synthesized without a value (env=local) points at its workload's fake instead.
      environmentOverrides: fakes.settings,
      functionEnvironment: { AWS_ENDPOINT_URL_DYNAMODB: conflicts.endpoint },
      faults: { crashAfterWorkRate: options.crashRate ?? 0, delayPastTimeoutRate: options.timeoutRate ?? 0 },
      onAlarm: ({ name, from, to, reason }) => log(`[${since()}] alarm ${name}: ${from} → ${to} (${reason})`),
      onNotification: (notification) => log('refused' in notification
        ? `[${since()}] sns: REFUSED ${notification.subject}: ${notification.refused}`
        : `[${since()}] sns: ${notification.subject} → ${notification.deliveredTo.join(', ') || 'no subscriptions'}`),
      enforceIam: options.enforceIam ?? true,
      onRefusal: (decision) => log(`[${since()}] local IAM: refused: ${refusalMessage(decision)}`),
    });
  } catch (error) {
    log(`local cloud failed to start: ${(error as Error).message}`);
    await fakes.stop();
    await conflicts.stop();
    await engines.stop();
    process.exit(1);
  }
  const { resources } = cloud;
  log(`[${since()}] stack ${resources.stackName} is running locally:`);
  for (const queue of resources.queues) log(`  queue     ${queue.name}  ${queue.url}`);
  for (const table of resources.tables) log(`  table     ${table.name}${table.streamArn ? '  (stream)' : ''}`);
  for (const fn of resources.functions) log(`  function  ${fn.name}  (timeout ${fn.timeoutMs / 1000}s, ${fn.memoryLimitInMB} MB)`);
  for (const mapping of resources.mappings) log(`  mapping   ${mapping.eventSourceArn.split(':').slice(5).join(':')} → ${mapping.functionName}`);
  for (const url of resources.urls) log(`  url       ${url.url}  → ${url.functionName}`);
  for (const check of cloud.preTrafficChecks) log(`  pre-traffic check  ${check.hookFunctionName} → ${check.functionName}: ${check.status}`);
  log(`  (not emulated: ${resources.ignoredTypes.join(', ')})`);
  log(cloud.enforcingIam
    ? `  iam       enforced: each function's DynamoDB and SQS calls against its role's policies, the queue and topic policies and ${resources.iam.endpoints.length} VPC endpoint policies (${resources.iam.roles.size} roles; the mappings' roles checked at start); a refusal prints as "local IAM: refused"`
    : '  iam       NOT enforced (--no-enforce-iam): every call is allowed, as nowhere on AWS');
  const subscriptions = resources.iam.subscriptions.map((subscription) => `${subscription.protocol}:${subscription.endpoint}`);
  log(`  sns       ${resources.iam.topics.size} topic(s): alarm notifications published as cloudwatch.amazonaws.com, authorized by the topic policy, delivered to the local outbox (${subscriptions.join(', ') || 'no subscriptions'})`);

  log(`  cloudwatch ${cloud.cloudWatchUrl}  (metrics the functions logged as EMF: GetMetricData, ListMetrics; the stack's alarms: DescribeAlarms)`);
  log(`  traces    ${cloud.tracesUrl}  (the functions' and the demo producer's spans: ballast trace <jobId | traceId | idempotencyKey>)`);
  consoleEndpoint = await serveConsoleOf(cloud, engines, registry.catalog, options.consolePort ?? 0);
  log(`  console   ${consoleEndpoint.url}  (the stack's CloudWatch dashboard, alarms, deployments, dead letters and traces, live)`);
  writeLocalCloudFile({
    pid: process.pid,
    stackName: resources.stackName,
    region: LOCAL_REGION,
    environment: { ...engineEnvironment(engines), AWS_ENDPOINT_URL_CLOUDWATCH: cloud.cloudWatchUrl, [TRACES_URL_VARIABLE]: cloud.tracesUrl },
    outputs: resources.outputs,
    startedAt: new Date().toISOString(),
    registry: stack.registry,
  });
  const outputs = resources.outputs;
  if (options.demo) {
    const sqs = new SQSClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: engines.sqs.endpoint });
    const { jobs, durationMs } = options.demo;
    log(`[${since()}] demo: ${jobs} jobs over ${durationMs / 1000}s (every workload's traffic, duplicates, malformed, one incompatible version), with concurrent reads`);
    const summary = await runDemo({ cloud, sqs, workloads: registry.workloads, jobs, durationMs, log, isShuttingDown: () => shuttingDown });
    if (shuttingDown) await new Promise(() => undefined);
    log(`[${since()}] demo complete: ${summary}`);
    log(`  transaction conflicts the service would have raised: ${Object.values(conflicts.conflicts()).reduce((a, b) => a + b, 0)} (met by the functions and retried; DynamoDB Local alone raises none)`);
  }

  const env = engineEnvironment(engines);
  log('');
  log('The stack keeps running. Try:');
  log(`  export AWS_REGION=${env.AWS_REGION} AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_ENDPOINT_URL_SQS=${env.AWS_ENDPOINT_URL_SQS} AWS_ENDPOINT_URL_DYNAMODB=${env.AWS_ENDPOINT_URL_DYNAMODB}`);
  // Examples from the workloads' own demo traffic: one job, and one read per read route.
  const example = await demoWorkload(registry.workloads, { jobs: 10, seed: 7 });
  const firstJob = example.messages[0];
  if (outputs.JobsQueueUrl && firstJob) log(`  aws sqs send-message --queue-url ${outputs.JobsQueueUrl} --message-body '${firstJob.body}'`);
  const readRoutes = new Map(example.reads.map((path) => [path.split('/')[0], path]));
  if (outputs.ReadApiUrl) for (const path of readRoutes.values()) log(`  curl -i ${outputs.ReadApiUrl}${path}`);
  if (outputs.JobsDeadLetterQueueUrl) log(`  aws sqs receive-message --queue-url ${outputs.JobsDeadLetterQueueUrl} --message-attribute-names All`);
  log('  ballast status        (also: doctor, dlq list, dlq show <id>, dlq replay --reason <r> --dry-run, cache check, trace <jobId>)');
  const [tracedJob] = cloud.traces.recentJobs(1);
  if (tracedJob) log(`  ballast trace ${tracedJob.jobId}   (a demo job's spans, from produce to the first read; also in the console's Traces tab)`);
  log('Press Ctrl-C to stop.');
  if (options.exitAfterDemo) return shutdown('exit-after-demo');
  setInterval(() => {}, 1 << 30);
  return new Promise<never>(() => undefined);
}
