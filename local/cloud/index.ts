import { rmSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import { engineEnvironment, freePort, localClientConfig, type EngineEndpoints } from '../engines/index.ts';
import { FunctionRuntime, INIT_PHASE_LIMIT_MS, type FunctionFaults } from '../lambda/function-runtime.ts';
import { startSqsEventSource, type SqsEventSource, type InvocationSummary } from '../lambda/sqs-event-source.ts';
import { startDynamoDbStreamEventSource, type DynamoDbStreamEventSource } from '../lambda/dynamodb-stream-event-source.ts';
import { synthesize, type SynthesizedStack } from './assembly.ts';
import { serveCloudWatch } from './cloudwatch-endpoint.ts';
import { stackUpdate, type StackUpdateOptions, type StackUpdateOutcome } from './stack-update.ts';
import type { DeploymentEvent } from '../codedeploy/deployment.ts';
import { serveFunctionUrl } from './function-url.ts';
import { serveCodeDeploy } from './codedeploy-endpoint.ts';
import { serveLambda, type CallAuthorizer } from './lambda-endpoint.ts';
import { MetricsCollector } from './metrics.ts';
import { serveMeasuredDynamoDb } from './measured-dynamodb.ts';
import { eventCountRecorder, recordLambdaMetrics } from './lambda-metrics.ts';
import { provision, type LocalResources } from './provision.ts';
import { LocalAlarms, metricClock, sampleQueueMetrics, type AlarmTransition } from '../cloudwatch/index.ts';
import { AliasRouting, type LocalVersion } from './alias-routing.ts';
import { SpanStore, type SpanStoreOptions } from '../tracing/store.ts';
import { serveTraces } from '../tracing/endpoint.ts';
import { registerProcessTracing } from '../tracing/process.ts';
import { Authorizer, refusalMessage, type CallPrincipal, type Decision } from '../iam/authorizer.ts';
import { decideSigned, functionCredentials, refusalOf, serveAuthorizingGateway } from '../iam/gateway.ts';
import { emptyStackIam } from '../iam/template.ts';
import { alarmNotification, LocalSns } from '../sns/local-sns.ts';
import { LOCAL_REGION } from '../engines/index.ts';
import { LOCAL_ACCOUNT } from './provision.ts';

export { AliasRouting, evenDraws, type LocalVersion } from './alias-routing.ts';

/** The code of a version published after the start: another bundle, or the same one with other environment variables. */
export interface PublishedCode {
  /** @default - the template's bundle */
  readonly file?: string;
  /** @default - the template's handler export */
  readonly exportName?: string;
  /** Set over the template's environment, e.g. another `WORKER_VERSION`. @default {} */
  readonly environment?: Readonly<Record<string, string>>;
}

export { MetricsCollector } from './metrics.ts';
export type { LocalResources, LocalDeploymentGroup } from './provision.ts';
export type { DeploymentEvent, DeploymentOutcome } from '../codedeploy/deployment.ts';

export type { StackUpdateOptions, StackUpdateOutcome } from './stack-update.ts';

export interface LocalCloudOptions {
  /** Running engines (see `startEngines`), possibly started by another process. */
  readonly engines: EngineEndpoints;
  /** The CDK app's entry file. @default - the `app` of `appDir`'s `cdk.json` */
  readonly appFile?: string;
  /** The CDK project whose app it synthesizes. @default process.cwd() */
  readonly appDir?: string;
  /** An app synthesized already (e.g. from another git tree); `appFile` and `context` are then unused. Its assembly is removed on stop. @default - synthesized here */
  readonly stack?: SynthesizedStack;
  /** Extra CDK context besides `env=local` (e.g. a workload setting, `<NAME>_API_URL`). @default {} */
  readonly context?: Record<string, unknown>;
  /** Shared, mutable: flip fields on a running cloud to inject faults. @default {} */
  readonly faults?: FunctionFaults;
  /** Every line a function writes (logs, EMF). @default - dropped after metrics are read */
  readonly onLog?: (line: string, functionName: string) => void;
  /** Draws which version an alias's invocation runs on while a canary routes a share elsewhere (seeded by the chaos run and tests). @default Math.random */
  readonly routingRandom?: () => number;
  readonly onInvocation?: (functionName: string, summary: InvocationSummary | unknown) => void;
  /** Every state change of one of the stack's alarms (evaluated locally every 10 s). @default - none */
  readonly onAlarm?: (transition: AlarmTransition) => void;
  /**
   * How much faster than real time the metric clock runs (metric timestamps, alarm periods and
   * their evaluation), so a rehearsal plays a canary's minutes in seconds; timeouts and leases
   * keep real time. @default 1
   */
  readonly timeScale?: number;
  /**
   * Variables set in every function's environment over the engines' own, e.g. the chaos run's
   * `AWS_ENDPOINT_URL_DYNAMODB` pointing at a fault proxy (the cloud itself keeps using the engine).
   * The functions' DynamoDB calls still pass the cloud's measuring hop first, which forwards them
   * there. @default {}
   */
  readonly functionEnvironment?: Record<string, string>;
  /**
   * Values that replace the template's own in every function that has the variable, e.g. a
   * workload setting synthesized as an https placeholder for `env=staging`, pointed at its local
   * fake. @default {}
   */
  readonly environmentOverrides?: Readonly<Record<string, string>>;
  /** Stream pollers' GetRecords interval. @default 200 */
  readonly streamPollIntervalMs?: number;
  /** Where the spans go (see {@link LocalTracingOptions}). @default {} */
  readonly tracing?: LocalTracingOptions;
  /**
   * Authorize every DynamoDB and SQS call of the functions, the event source mappings' reads and
   * the alarms' notifications against the template's IAM, resource and VPC endpoint policies, as
   * AWS would (see `local/iam`). Off only to tell whether a failure is a refusal. @default true
   */
  readonly enforceIam?: boolean;
  /** Every alarm notification: delivered (to whom) or refused (why). @default - none */
  readonly onNotification?: (notification: { readonly topicArn: string; readonly subject: string; readonly deliveredTo: readonly string[] } | { readonly topicArn: string; readonly subject: string; readonly refused: string }) => void;
  /** Every call the local IAM refused. @default - printed to stderr as `local IAM: refused: <AWS's message>` */
  readonly onRefusal?: (decision: Decision) => void;
}

/**
 * The local cloud's spans: those of every function whose environment has the OpenTelemetry
 * layer's `AWS_LAMBDA_EXEC_WRAPPER` (each sandbox registers the SDK the layer would), and those of
 * this process, kept in one bounded store (`cloud.traces`) served at `cloud.tracesUrl`.
 */
export interface LocalTracingOptions extends SpanStoreOptions {
  /**
   * Also collect the spans this process makes (a producer running beside the cloud, as `npm
   * start`'s demo does), registering the process's OpenTelemetry SDK if nothing has yet.
   * @default true
   */
  readonly collectProcessSpans?: boolean;
}

/** One deployment of the stack as the console shows it: the start's pre-traffic checks, or a stack update. */
export interface DeploymentRecord {
  readonly title: string;
  /** Epoch ms, real time. */
  readonly startedAtMs: number;
  /** `InProgress` until it ends; then the stack's status (`UPDATE_COMPLETE`, `UPDATE_ROLLBACK_COMPLETE`) or the checks' verdict. */
  status: string;
  /** Every event so far (CloudFormation's and CodeDeploy's), in order; `atMs` counts from `startedAtMs`. */
  readonly events: (DeploymentEvent & { readonly source: string })[];
}

/** A running local cloud. */
export interface LocalCloud {
  readonly resources: LocalResources;
  /** Where the synthesized template and bundles are, until {@link stop} removes them. */
  readonly assemblyDir: string;
  readonly metrics: MetricsCollector;
  /** The stack's CloudWatch alarms, evaluated against `metrics.series` (`DescribeAlarms` serves them). */
  readonly alarms: LocalAlarms;
  /** The local IAM: what it allowed and refused, and `revoke` to take a grant away. */
  readonly authorizer: Authorizer;
  /** Whether the functions' calls are authorized ({@link LocalCloudOptions.enforceIam}). */
  readonly enforcingIam: boolean;
  /** The stack's SNS topics: the alarms' notifications, delivered to the outbox or refused. */
  readonly sns: LocalSns;
  readonly runtimes: ReadonlyMap<string, FunctionRuntime>;
  /**
   * Each function's alias routing: every invocation of a mapping or URL goes to the alias's
   * version or, for the share `route` gives it, to one additional version (a canary).
   */
  readonly routing: ReadonlyMap<string, AliasRouting>;
  /** Every version of `functionName` published so far, oldest first. */
  versions(functionName: string): LocalVersion[];
  /** Publishes the next version of `functionName` (no traffic until `routing.get(name).route(...)`). */
  publishVersion(functionName: string, code?: PublishedCode): LocalVersion;
  readonly faults: FunctionFaults;
  /**
   * The stack's CodeDeploy pre-traffic hooks, run once at start as a deployment would: the hook
   * invokes the new version with a readiness event and reports Succeeded or Failed.
   */
  readonly preTrafficChecks: readonly { readonly functionName: string; readonly hookFunctionName: string; readonly status: string }[];
  /** The local CloudWatch endpoint (metrics, `DescribeAlarms`); functions reach it through `AWS_ENDPOINT_URL_CLOUDWATCH`. */
  readonly cloudWatchUrl: string;
  /** The spans of the functions (and of this process, unless `tracing.collectProcessSpans` is false). */
  readonly traces: SpanStore;
  /** The span store over HTTP (`serveTraces`): what a description's `BALLAST_TRACES_URL` names for `ballast trace`. */
  readonly tracesUrl: string;
  /**
   * A stack update to `next` (the same app synthesized from another tree), as `cdk deploy` runs it:
   * functions without a deployment group and the alarms are replaced in place; each aliased
   * function with a deployment group gets a new version, deployed through the local CodeDeploy
   * (hooks, traffic steps, rollback alarms) on the cloud's time scale. A failed or stopped
   * deployment rolls the whole update back, as CloudFormation does.
   */
  updateStack(next: SynthesizedStack, options?: StackUpdateOptions): Promise<StackUpdateOutcome>;
  /** The pre-traffic checks at start and every stack update since, oldest first, with their events as they happen (the console's timeline). */
  deployments(): readonly DeploymentRecord[];
  /** Resolves when every stream mapping has caught up and is idle; rejects after `timeoutMs`. */
  streamsIdle(timeoutMs: number): Promise<void>;
  /**
   * Graceful shutdown: stop polling, let in-flight invocations finish within `graceMs`, then kill
   * what is left (its messages reappear after their visibility timeout) and close the URLs.
   */
  stop(options?: { graceMs?: number }): Promise<void>;
}

/**
 * The synthesized stack on the local engines, with Lambda semantics: synthesizes the CDK app with
 * `env=local`, creates its queues and tables, runs each function in worker-thread sandboxes with
 * its own resolved environment, polls its SQS and DynamoDB Streams mappings as Lambda does, and
 * serves its Function URLs. The functions' DynamoDB requests give the tables' `AWS/DynamoDB`
 * metrics (`measured-dynamodb.ts`). Nothing here names a resource of the stack.
 */
export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const [stack, ...others] = options.stack ? [options.stack] : await synthesize({ appFile: options.appFile, appDir: options.appDir, context: { env: 'local', ...options.context } });
  if (!stack || others.length > 0) throw new Error(`the local cloud runs exactly one stack; the app synthesized ${others.length + (stack ? 1 : 0)}`);
  const dynamodb = new DynamoDBClient(localClientConfig(options.engines.dynamodb.endpoint));
  const streams = new DynamoDBStreamsClient(localClientConfig(options.engines.dynamodb.endpoint));
  const sqs = new SQSClient(localClientConfig(options.engines.sqs.endpoint));
  const enforcingIam = options.enforceIam ?? true;
  const authorizer = new Authorizer({
    iam: emptyStackIam(), accountId: LOCAL_ACCOUNT,
    onRefusal: options.onRefusal ?? ((decision) => console.error(`local IAM: refused: ${refusalMessage(decision)}`)),
  });
  // Each function's sandbox signs with its own key; the gateways know whose it is.
  const principals = new Map<string, CallPrincipal>();
  const signers = { authorizer, principals: (key: string) => principals.get(key), scope: { region: LOCAL_REGION, accountId: LOCAL_ACCOUNT } };
  const sqsGateway = enforcingIam ? await serveAuthorizingGateway({ ...signers, service: 'sqs', target: options.engines.sqs.endpoint }) : undefined;
  const sqsEndpoint = options.engines.sqs.endpoint;
  /**
   * The SQS client sends to a queue URL's host, not to its configured endpoint: a function's queue
   * URLs (its environment, `GetQueueUrl`'s answers, which the gateway rewrites) name the gateway,
   * so every call it makes is authorized. The outputs and the cloud's own pollers keep the engine's.
   */
  const throughSqsGateway = (value: string) => (sqsGateway && value.startsWith(`${sqsEndpoint}/`) ? `${sqsGateway.url}${value.slice(sqsEndpoint.length)}` : value);
  const resources = await provision({
    stack, dynamodb, sqs, sqsEndpoint, redisPort: options.engines.redis.port, urlPorts: freePort,
  });
  authorizer.replace(resources.iam);
  /** The resources as the latest stack update left them. */
  let current = resources;
  for (const fn of resources.functions) principals.set(functionCredentials(fn.name).accessKeyId, { kind: 'function', functionName: fn.name, functionArn: fn.arn });
  if (enforcingIam) await checkEventSourceRoles(resources, authorizer);

  const timeScale = options.timeScale ?? 1;
  const metrics = new MetricsCollector({ clock: metricClock(timeScale) });
  // Evaluated and sampled often enough for the scaled periods (10 s of metric time at most).
  const everyMs = Math.max(250, 10_000 / timeScale);
  const sns = new LocalSns({ iam: () => current.iam, authorizer, series: metrics.series, clock: metrics.clock });
  const notify = (transition: AlarmTransition) => {
    options.onAlarm?.(transition);
    const alarm = current.alarms.find((candidate) => 'arn' in candidate && alarmNameOf(candidate) === transition.name);
    if (!alarm || !('arn' in alarm)) return;
    const { subject, message } = alarmNotification({ name: transition.name, arn: alarm.arn, accountId: LOCAL_ACCOUNT, region: LOCAL_REGION }, transition, Date.now());
    for (const topicArn of alarm.actions[transition.to] ?? []) {
      if (!topicArn.startsWith('arn:aws:sns:')) continue;
      void sns.publish({ kind: 'service', service: 'cloudwatch.amazonaws.com', sourceArn: alarm.arn }, topicArn, subject, message).then((outcome) => {
        // As CloudWatch keeps it: an Action item in the alarm's history, either way.
        if ('refused' in outcome) {
          const refused = refusalMessage(outcome.refused.decision);
          alarms.recordAction(transition.name, `Failed to execute action ${topicArn}. Received error: "${refused}"`, false);
          options.onNotification?.({ topicArn, subject, refused });
        } else {
          alarms.recordAction(transition.name, `Successfully executed action ${topicArn}`, true);
          options.onNotification?.({ topicArn, subject, deliveredTo: outcome.delivered.map((delivery) => `${delivery.protocol}:${delivery.endpoint}`) });
        }
      }, (error: unknown) => alarms.recordAction(transition.name, `Failed to execute action ${topicArn}. Received error: "${String(error)}"`, false));
    }
  };
  const alarms = new LocalAlarms({ alarms: resources.alarms, series: metrics.series, onTransition: notify, nowMs: metrics.clock, intervalMs: everyMs }).start();
  const queueMetrics = sampleQueueMetrics({
    sqs, queues: resources.queues, series: metrics.series, engine: options.engines.sqs, clock: metrics.clock, intervalMs: everyMs,
  });
  const faults = options.faults ?? {};
  const runtimes = new Map<string, FunctionRuntime>();
  /** Every published version of each function, by number. */
  const versions = new Map<string, Map<string, LocalVersion>>();
  /**
   * A call to one of the cloud's own endpoints (Lambda, CodeDeploy), decided for whoever signed it,
   * as the gateways decide DynamoDB and SQS (no endpoint policy: the stack has no endpoint for them).
   */
  const authorizeSigned: CallAuthorizer | undefined = enforcingIam ? async (request, call) => {
    const verdict = await decideSigned(signers, request.headers.authorization, () => [call]);
    if (verdict.kind === 'invalid-token') return 'The security token included in the request is invalid.';
    return verdict.kind === 'refused' ? refusalMessage(verdict.decision) : undefined;
  } : undefined;
  /** The deployment group each deployment id (a hook's verdict names it) belongs to. */
  const deploymentGroups = new Map<string, string>();
  // Functions reach each other (Invoke), CodeDeploy (hook verdicts) and CloudWatch like any other AWS API.
  const lambdaApi = await serveLambda((name, qualifier) => {
    const routed = routing.get(name);
    if (!routed) return undefined;
    if (qualifier === undefined || qualifier === '$LATEST') return { runtime: routed.primary.runtime, version: '$LATEST' };
    const published = versions.get(name)?.get(qualifier);
    if (published) return { runtime: published.runtime, version: published.version };
    if (!resources.functions.find((fn) => fn.name === name)?.aliases.includes(qualifier)) return undefined;
    const picked = routed.pick();
    return { runtime: picked.runtime, version: picked.version };
  }, 0, authorizeSigned);
  const codeDeploy = await serveCodeDeploy(0, { authorize: authorizeSigned, deploymentGroupArn: (id) => deploymentGroups.get(id) });
  const cloudWatch = await serveCloudWatch(metrics, 0, alarms);
  const { collectProcessSpans = true, ...storeOptions } = options.tracing ?? {};
  const traces = new SpanStore(storeOptions);
  const tracesEndpoint = await serveTraces(traces);
  const stopCollectingProcessSpans = collectProcessSpans ? registerProcessTracing().subscribe((spans) => traces.add(spans)) : () => undefined;
  const directEnvironment: Record<string, string> = {
    ...engineEnvironment(options.engines), AWS_ENDPOINT_URL_LAMBDA: lambdaApi.url, AWS_ENDPOINT_URL_CODEDEPLOY: codeDeploy.url,
    AWS_ENDPOINT_URL_CLOUDWATCH: cloudWatch.url, AWS_ENDPOINT_URL_SQS: sqsGateway?.url ?? sqsEndpoint, ...options.functionEnvironment,
  };
  // DynamoDB Local publishes no metrics: the functions' calls are measured on their way to it (or to a fault proxy).
  // And authorized on the same hop, first.
  const measuredDynamoDb = await serveMeasuredDynamoDb({
    target: directEnvironment.AWS_ENDPOINT_URL_DYNAMODB ?? options.engines.dynamodb.endpoint, metrics,
    ...(enforcingIam ? { refusalOf: (request: IncomingMessage, body: Buffer) => refusalOf({ ...signers, service: 'dynamodb' }, request, body) } : {}),
  });
  const baseEnvironment = { ...directEnvironment, AWS_ENDPOINT_URL_DYNAMODB: measuredDynamoDb.url };
  /** Every runtime of every version, stopped with the cloud. */
  const allRuntimes: FunctionRuntime[] = [];
  const runtimeFor = (fn: LocalResources['functions'][number], version: string, code: PublishedCode = {}) => {
    const runtime = new FunctionRuntime({
      functionName: fn.name,
      file: code.file ?? fn.file,
      exportName: code.exportName ?? fn.exportName,
      timeoutMs: fn.timeoutMs,
      memoryLimitInMB: fn.memoryLimitInMB,
      environment: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        TZ: 'UTC',
        ...baseEnvironment,
        AWS_LAMBDA_FUNCTION_NAME: fn.name,
        AWS_LAMBDA_FUNCTION_VERSION: version === LOCAL_VERSION ? '$LATEST' : version,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryLimitInMB),
        ...(enforcingIam ? sandboxCredentials(fn.name) : {}),
        ...Object.fromEntries(Object.entries(fn.environment).map(([key, value]) => [key, throughSqsGateway(value)])),
        ...Object.fromEntries(Object.entries(options.environmentOverrides ?? {}).filter(([key]) => key in fn.environment)),
        ...code.environment,
      },
      faults,
      onSpans: (spans) => traces.add(spans),
      // The function's concurrency: this version's busy sandboxes when the invocation started, and its other versions' now.
      onInvoked: (report) => recordLambdaMetrics(metrics, fn, version, report, allRuntimes
        .filter((other) => other !== runtime && other.options.functionName === fn.name)
        .reduce((busy, other) => busy + other.busySandboxes, report.busySandboxes)),
      onOutput: (line, name) => {
        metrics.ingest(line);
        options.onLog?.(line, name);
      },
    });
    allRuntimes.push(runtime);
    return runtime;
  };
  const routing = new Map<string, AliasRouting>();
  /** The highest version published so far, per function. */
  const published = new Map<string, number>();
  for (const fn of resources.functions) {
    const runtime = runtimeFor(fn, LOCAL_VERSION);
    runtimes.set(fn.name, runtime);
    const first = { version: LOCAL_VERSION, runtime };
    versions.set(fn.name, new Map([[LOCAL_VERSION, first]]));
    routing.set(fn.name, new AliasRouting(first, options.routingRandom));
  }
  const publish = (fn: LocalResources['functions'][number], code: PublishedCode = {}, number?: string): LocalVersion => {
    const version = number ?? String((published.get(fn.name) ?? 1) + 1);
    published.set(fn.name, Number(version));
    const created = { version, runtime: runtimeFor(fn, version, code) };
    versions.get(fn.name)?.set(version, created);
    return created;
  };
  const routingOf = (name: string) => {
    const routed = routing.get(name);
    if (!routed) throw new Error(`a mapping or URL targets function ${name}, which the template does not define`);
    return routed;
  };
  const runtimeOf = (name: string) => {
    const runtime = runtimes.get(name);
    if (!runtime) throw new Error(`a mapping or URL targets function ${name}, which the template does not define`);
    return runtime;
  };

  const sqsSources: SqsEventSource[] = [];
  const streamSources: DynamoDbStreamEventSource[] = [];
  for (const mapping of resources.mappings) {
    const runtime = runtimeOf(mapping.functionName);
    const p = mapping.properties;
    const reportBatchItemFailures = Array.isArray(p.FunctionResponseTypes) && p.FunctionResponseTypes.includes('ReportBatchItemFailures');
    const batchingWindowMs = Number(p.MaximumBatchingWindowInSeconds ?? 0) * 1000;
    const queue = resources.queues.find((q) => q.arn === mapping.eventSourceArn);
    if (queue) {
      sqsSources.push(startSqsEventSource({
        sqs, queueUrl: queue.url, queueArn: queue.arn, handler: routingOf(mapping.functionName).handler, functionName: mapping.functionName,
        functionTimeoutMs: runtime.options.timeoutMs,
        initPhaseLimitMs: INIT_PHASE_LIMIT_MS,
        batchSize: Number(p.BatchSize ?? 10),
        maximumBatchingWindowMs: batchingWindowMs,
        maximumConcurrency: Number((p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency ?? 1000),
        reportBatchItemFailures,
        onInvocation: (summary) => options.onInvocation?.(mapping.functionName, summary),
        onEventCount: eventCountRecorder(metrics, mapping),
      }));
      continue;
    }
    const table = resources.tables.find((t) => t.streamArn === mapping.eventSourceArn);
    if (table?.streamArn) {
      const destination = (p.DestinationConfig as { OnFailure?: { Destination?: string } } | undefined)?.OnFailure?.Destination;
      const failureQueue = resources.queues.find((q) => q.arn === destination);
      streamSources.push(startDynamoDbStreamEventSource({
        streams, streamArn: table.streamArn, handler: routingOf(mapping.functionName).handler, functionName: mapping.functionName,
        functionTimeoutMs: runtime.options.timeoutMs,
        initPhaseLimitMs: INIT_PHASE_LIMIT_MS,
        batchSize: Number(p.BatchSize ?? 100),
        maximumBatchingWindowMs: batchingWindowMs,
        startingPosition: p.StartingPosition === 'TRIM_HORIZON' ? 'TRIM_HORIZON' : 'LATEST',
        bisectBatchOnFunctionError: p.BisectBatchOnFunctionError === true,
        maximumRetryAttempts: Number(p.MaximumRetryAttempts ?? -1),
        maximumRecordAgeSeconds: Number(p.MaximumRecordAgeInSeconds ?? -1),
        ...(failureQueue ? { onFailure: { sqs, queueUrl: failureQueue.url } } : {}),
        reportBatchItemFailures,
        pollIntervalMs: options.streamPollIntervalMs ?? 200,
        onEventCount: eventCountRecorder(metrics, mapping),
        onInvocation: (summary) => {
          metrics.series.record({ namespace: 'AWS/Lambda', name: 'IteratorAge', dimensions: { FunctionName: mapping.functionName } }, summary.iteratorAgeMs, metrics.clock());
          options.onInvocation?.(mapping.functionName, summary);
        },
      }));
      continue;
    }
    throw new Error(`mapping ${mapping.logicalId}: event source ${mapping.eventSourceArn} is neither a queue nor a table stream of this stack`);
  }

  const servers: Server[] = [];
  for (const url of resources.urls) {
    const routed = routingOf(url.functionName);
    servers.push(await serveFunctionUrl(url.port, async (event) => {
      // Lambda counts a Function URL's answers by class; a failed invocation is its 502.
      let status = 502;
      try {
        const result = await routed.handler(event);
        status = typeof result === 'object' && result !== null && 'statusCode' in result ? Number((result as { statusCode?: number }).statusCode ?? 200) : 200;
        return result;
      } finally {
        const record = (name: string, value: number) => metrics.series.record({ namespace: 'AWS/Lambda', name, dimensions: { FunctionName: url.functionName } }, value, metrics.clock());
        record('UrlRequestCount', 1);
        record('Url4xxCount', status >= 400 && status < 500 ? 1 : 0);
        record('Url5xxCount', status >= 500 ? 1 : 0);
      }
    }));
  }

  let deployments = 0;
  /** Invokes a lifecycle hook as CodeDeploy does and waits for the status it reports (within its timeout). */
  const runHook = async (hookFunctionName: string, deploymentId: string): Promise<string> => {
    const executionId = randomUUID();
    const hook = routingOf(hookFunctionName).primary.runtime;
    const group = current.deploymentGroups.find((candidate) => candidate.beforeAllowTrafficHook === hookFunctionName || candidate.afterAllowTrafficHook === hookFunctionName);
    if (group) deploymentGroups.set(deploymentId, group.arn);
    try {
      await hook.invoke({ DeploymentId: deploymentId, LifecycleEventHookExecutionId: executionId });
      return (await codeDeploy.statusOf(executionId, 5_000)).status;
    } catch (error) {
      return `Failed (${(error as Error).message})`;
    }
  };
  const preTrafficChecks = [];
  for (const hook of resources.preTrafficHooks) {
    deployments += 1;
    const status = await runHook(hook.hookFunctionName, `d-LOCAL${deployments}`);
    preTrafficChecks.push({ functionName: hook.functionName, hookFunctionName: hook.hookFunctionName, status });
  }

  const deploymentLog: DeploymentRecord[] = [{
    title: 'pre-traffic checks at start', startedAtMs: Date.now(),
    status: preTrafficChecks.every((check) => check.status === 'Succeeded') ? 'Succeeded' : 'Failed',
    events: preTrafficChecks.map((check) => ({ source: check.functionName, atMs: 0, kind: 'hook' as const, message: `BeforeAllowTraffic ${check.hookFunctionName}: ${check.status}` })),
  }];
  const runUpdate = stackUpdate({
    provision: (next, version) => provision({
      stack: next, dynamodb, sqs, sqsEndpoint, redisPort: options.engines.redis.port, urlPorts: async () => 0,
      version, resolveOnly: true,
    }),
    resources: () => current,
    committed: (resources) => void (current = { ...resources, urls: current.urls }),
    applyIam: (iam) => authorizer.replace(iam),
    routing, alarms, codeDeploy, timeScale, metricClock: metrics.clock,
    nextVersion: () => String(Math.max(...[...published.values(), 1]) + 1),
    publish,
    runHook: async (hookName, deploymentId) => ((await runHook(hookName, deploymentId)) === 'Succeeded' ? 'Succeeded' : 'Failed'),
    nextDeploymentId: () => `d-LOCAL${(deployments += 1)}`,
  });
  const updateStack = async (next: SynthesizedStack, updateOptions: StackUpdateOptions = {}): Promise<StackUpdateOutcome> => {
    const record: DeploymentRecord = { title: `stack update of ${next.stackName}`, startedAtMs: Date.now(), status: 'InProgress', events: [] };
    deploymentLog.push(record);
    try {
      const outcome = await runUpdate(next, { onEvent: (event) => { record.events.push(event); updateOptions.onEvent?.(event); } });
      record.status = outcome.status;
      return outcome;
    } catch (error) {
      record.status = `failed: ${(error as Error).message}`;
      throw error;
    }
  };

  let stopping: Promise<void> | undefined;
  return {
    resources,
    assemblyDir: stack.assemblyDir,
    metrics,
    alarms,
    authorizer,
    enforcingIam,
    sns,
    runtimes,
    routing,
    publishVersion(functionName, code = {}) {
      const fn = resources.functions.find((candidate) => candidate.name === functionName);
      if (!fn) throw new Error(`no function ${functionName} in the stack`);
      return publish(fn, code);
    },
    cloudWatchUrl: cloudWatch.url,
    traces,
    tracesUrl: tracesEndpoint.url,
    updateStack,
    deployments: () => deploymentLog,
    versions: (functionName) => [...(versions.get(functionName)?.values() ?? [])],
    faults,
    preTrafficChecks,
    streamsIdle: async (timeoutMs) => void (await Promise.all(streamSources.map((source) => source.idle(timeoutMs)))),
    stop: (stopOptions = {}) => {
      stopping ??= (async () => {
        const graceMs = stopOptions.graceMs ?? 10_000;
        alarms.stop();
        queueMetrics.stop();
        await Promise.all([...sqsSources, ...streamSources].map((source) => source.stop({ graceMs })));
        await Promise.all(servers.map((server) => new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        })));
        await Promise.all(allRuntimes.map((runtime) => runtime.stop()));
        await Promise.all([lambdaApi.stop(), codeDeploy.stop(), cloudWatch.stop(), measuredDynamoDb.stop(), tracesEndpoint.stop(), sqsGateway?.stop()]);
        stopCollectingProcessSpans();
        dynamodb.destroy();
        streams.destroy();
        sqs.destroy();
        // The synthesized assembly (template and bundles, ~20 MB) was ours alone.
        rmSync(stack.assemblyDir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** The version every alias points at when the cloud starts (the template's own `Version` resolves to it). */
const LOCAL_VERSION = '1';

/** A sandbox's credentials: its own key, so the gateways know which function (and role) signs. */
function sandboxCredentials(functionName: string): Record<string, string> {
  const credentials = functionCredentials(functionName);
  return { AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey, AWS_SESSION_TOKEN: credentials.sessionToken };
}

function alarmNameOf(alarm: { readonly logicalId: string; readonly properties: Readonly<Record<string, unknown>> }): string {
  return alarm.properties.AlarmName === undefined ? alarm.logicalId : String(alarm.properties.AlarmName);
}

/**
 * What Lambda checks when an event source mapping is created: its function's role may read the
 * source (a queue: receive, delete, read its attributes; a stream: describe, iterate, read). The
 * Lambda service polls from outside any VPC, so no endpoint policy applies. AWS refuses the
 * deploy otherwise; so does the local cloud, at start.
 */
async function checkEventSourceRoles(resources: LocalResources, authorizer: Authorizer): Promise<void> {
  for (const mapping of resources.mappings) {
    const fn = resources.functions.find((candidate) => candidate.name === mapping.functionName);
    if (!fn) continue;
    const principal: CallPrincipal = { kind: 'function', functionName: fn.name, functionArn: fn.arn };
    const isQueue = resources.queues.some((queue) => queue.arn === mapping.eventSourceArn);
    const actions = isQueue
      ? ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']
      : ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
    for (const action of actions) {
      const decision = await authorizer.authorize(principal, { action, resource: mapping.eventSourceArn });
      if (!decision.allowed) {
        throw new Error(`event source mapping ${mapping.logicalId}: the provided execution role does not have permissions to call ${action.split(':')[1]} on ${isQueue ? 'SQS' : 'DynamoDB'} (${refusalMessage(decision)}); AWS would refuse to create it: grant the function's role read access to ${mapping.eventSourceArn}`);
      }
    }
  }
}
