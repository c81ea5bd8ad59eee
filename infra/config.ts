import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { LambdaDeploymentConfig, type ILambdaDeploymentConfig } from 'aws-cdk-lib/aws-codedeploy';
import { FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { workloadSettings, type Registry } from '../shared/workloads/index.ts';

/** The environments `cdk deploy -c env=<name>` accepts. `local` is what `npm start` runs. */
export const ENVIRONMENT_NAMES = ['local', 'dev', 'staging', 'prod'] as const;
export type EnvironmentName = (typeof ENVIRONMENT_NAMES)[number];

/**
 * OpenTelemetry on AWS: the AWS Lambda Layer for OpenTelemetry (`AWSOpenTelemetryDistroJs`) on
 * every function, exporting to X-Ray (see `infra/constructs/tracing.ts`). The local cloud traces a
 * function exactly when its template has the layer's environment (`AWS_LAMBDA_EXEC_WRAPPER`), with
 * the same sampler settings.
 */
export interface TracingConfig {
  /**
   * Whether every function carries the layer and its environment (`AWS_LAMBDA_EXEC_WRAPPER`,
   * `OTEL_*`). Off, the functions keep X-Ray active tracing (Lambda's own segments) and the code's
   * OpenTelemetry API calls do nothing.
   * @default true
   */
  readonly enabled: boolean;
  /**
   * Share of new traces recorded, between 0 and 1 (`OTEL_TRACES_SAMPLER_ARG` of the parent-based
   * ratio sampler: a trace's first span decides, every span under it follows).
   * @default 1 - in local and dev (every trace); 0.2 in staging; 0.05 in prod
   */
  readonly samplingRatio: number;
  /**
   * The layer's version ARN, in the stack's region (`-c otelLayerArn=...`).
   * @default - `AWSOpenTelemetryDistroJs` for the stack's region (`OTEL_LAYER_ARNS` in infra/constructs/tracing.ts)
   */
  readonly layerArn?: string;
}

/** Everything that differs between environments, in one typed place. */
export interface EnvironmentConfig {
  readonly name: EnvironmentName;
  /** Applied to stateful resources (tables, queues, logs). prod retains them. */
  readonly removalPolicy: RemovalPolicy;
  /** DynamoDB deletion protection; on in prod. */
  readonly deletionProtection: boolean;
  /** CloudFormation termination protection of the stack; on in prod. */
  readonly terminationProtection: boolean;
  /** The serverless Valkey cache: its engine major version and what it may consume (a bill's ceiling). */
  readonly cache: {
    readonly majorEngineVersion: string;
    readonly maxDataStorageGb: number;
    readonly maxEcpuPerSecond: number;
  };
  readonly worker: {
    readonly timeout: Duration;
    readonly memorySize: number;
    readonly batchSize: number;
    readonly maxBatchingWindow: Duration;
    /** Concurrent invocations of the SQS mapping; leave it out with `provisionedPollers`. */
    readonly maxConcurrency?: number;
    /**
     * Provisioned mode for the SQS mapping (pollers kept warm, and the most it scales to). Refused
     * with `maxConcurrency`: an environment that sets it also sets `maxConcurrency: undefined`.
     */
    readonly provisionedPollers?: { readonly minimum: number; readonly maximum: number };
    /** Lease of a claim and lock; heartbeats extend it. */
    readonly lockLease: Duration;
    readonly deploymentConfig: ILambdaDeploymentConfig;
    /**
     * How a canary judges the new version (see QueueWorker's CanaryProps): its error rate, and the
     * records it must complete before promotion (`-c canaryMinRecords=<n>`; 0 promotes on the
     * readiness check alone, which an idle queue needs).
     */
    readonly canary: { readonly errorRatePercent: number; readonly minInvocationsPerMinute: number; readonly minRecords: number };
  };
  readonly queue: {
    readonly maxReceiveCount: number;
    readonly retentionPeriod: Duration;
    readonly deadLetterRetentionPeriod: Duration;
  };
  /** How long completed jobs suppress duplicates; must outlive queue + DLQ retention + replayWindow. */
  readonly idempotencyRetention: Duration;
  /** How long after leaving the DLQ a message may still be replayed. */
  readonly replayWindow: Duration;
  readonly invalidator: {
    readonly timeout: Duration;
    readonly batchSize: number;
    readonly retryAttempts: number;
    readonly maxRecordAge: Duration;
  };
  /** The consumer of the invalidator's on-failure queue, which re-applies the failed stream batches. */
  readonly invalidationRepair: {
    /**
     * Must fit a full cache reconcile (the fallback when the records left the stream); the failure
     * queue's visibility timeout is derived from it (6 ×).
     */
    readonly timeout: Duration;
    /** Failure-queue messages (one failed stream batch each) per invocation. */
    readonly batchSize: number;
    /**
     * Concurrent invocations of its SQS mapping (at least 2): an outage leaves a burst of failed
     * batches, and replaying them should not hit a just-recovered cache all at once.
     */
    readonly maxConcurrency: number;
    /** Deliveries of one message before it moves to the repair's DLQ (at least 5). */
    readonly maxReceiveCount: number;
  };
  readonly readApi: {
    readonly timeout: Duration;
    readonly authType: FunctionUrlAuthType;
  };
  readonly network: {
    readonly maxAzs: number;
    /** NAT gateways for the worker's calls to external APIs. */
    readonly natGateways: number;
  };
  /**
   * The values of the registered workloads' settings (`Workload.settings`, e.g. an external API's
   * base URL), passed to the worker as environment variables; from `-c <NAME>=<value>`.
   */
  readonly settings: Readonly<Record<string, string>>;
  readonly logRetention: RetentionDays;
  /** OpenTelemetry tracing of every function through the AWS-maintained layer. */
  readonly tracing: TracingConfig;
  readonly alarms: {
    /** Subscribed to the alarm topic when set (also `-c alarmEmail=...`). */
    readonly email?: string;
    /** Age of the oldest message before the backlog alarm fires. */
    readonly oldestMessageAge: Duration;
    /** Stream iterator age before the invalidation-lag alarm fires. */
    readonly iteratorAge: Duration;
    /** Claim attempts that met a held lock (each a lock-busy retry) per 5 minutes before the contention alarm fires. */
    readonly lockContentionPer5Minutes: number;
    /** Duplicates suppressed as a percentage of jobs before the duplicate-rate alarm fires. */
    readonly duplicateRatePercent: number;
    /** Cache reads answered from the table (Redis failing, breaker open) per 5 minutes before the fallback alarm fires. */
    readonly cacheFallbacksPer5Minutes: number;
    /** Commands ElastiCache throttled per 5 minutes before its alarm fires. */
    readonly cacheThrottledCommandsPer5Minutes: number;
    /** Throttled read or write events per table per 5 minutes before its alarm fires. */
    readonly dynamoDbThrottlesPer5Minutes: number;
    /** DynamoDB internal errors per table per 5 minutes before its alarm fires. */
    readonly dynamoDbSystemErrorsPer5Minutes: number;
  };
}

const base: Omit<EnvironmentConfig, 'name'> = {
  removalPolicy: RemovalPolicy.DESTROY,
  deletionProtection: false,
  terminationProtection: false,
  cache: { majorEngineVersion: '8', maxDataStorageGb: 5, maxEcpuPerSecond: 100_000 },
  worker: {
    timeout: Duration.seconds(30),
    memorySize: 512,
    batchSize: 10,
    maxBatchingWindow: Duration.seconds(0),
    maxConcurrency: 5,
    lockLease: Duration.seconds(30),
    deploymentConfig: LambdaDeploymentConfig.ALL_AT_ONCE,
    canary: { errorRatePercent: 5, minInvocationsPerMinute: 10, minRecords: 0 },
  },
  queue: { maxReceiveCount: 5, retentionPeriod: Duration.days(4), deadLetterRetentionPeriod: Duration.days(14) },
  idempotencyRetention: Duration.days(35),
  replayWindow: Duration.days(7),
  invalidator: { timeout: Duration.seconds(30), batchSize: 100, retryAttempts: 10, maxRecordAge: Duration.hours(1) },
  invalidationRepair: { timeout: Duration.minutes(2), batchSize: 5, maxConcurrency: 2, maxReceiveCount: 5 },
  readApi: { timeout: Duration.seconds(10), authType: FunctionUrlAuthType.AWS_IAM },
  network: { maxAzs: 2, natGateways: 1 },
  settings: {},
  logRetention: RetentionDays.ONE_MONTH,
  // Every trace: dev traffic is small, and a developer looking for a trace should find it.
  tracing: { enabled: true, samplingRatio: 1 },
  alarms: {
    oldestMessageAge: Duration.minutes(15),
    iteratorAge: Duration.minutes(1),
    lockContentionPer5Minutes: 50,
    duplicateRatePercent: 20,
    cacheFallbacksPer5Minutes: 100,
    cacheThrottledCommandsPer5Minutes: 10,
    dynamoDbThrottlesPer5Minutes: 10,
    dynamoDbSystemErrorsPer5Minutes: 5,
  },
};

const CONFIGS: Record<EnvironmentName, EnvironmentConfig> = {
  // The local cloud runs the same stack on emulators: short timeouts so demos and tests move fast.
  local: {
    ...base,
    name: 'local',
    worker: { ...base.worker, timeout: Duration.seconds(10), lockLease: Duration.seconds(10), maxConcurrency: 4 },
    invalidationRepair: { ...base.invalidationRepair, timeout: Duration.seconds(30) },
    // On, and every trace: the local cloud traces a function when its template has the layer's
    // environment, and `ballast trace` should find any job of a demo or test.
    tracing: { enabled: true, samplingRatio: 1 },
  },
  dev: { ...base, name: 'dev' },
  staging: {
    ...base,
    name: 'staging',
    worker: {
      ...base.worker,
      deploymentConfig: LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
      canary: { ...base.worker.canary, minRecords: 20 },
    },
    // One trace in five: load tests still give hundreds of traces, at a fifth of the X-Ray bill.
    tracing: { ...base.tracing, samplingRatio: 0.2 },
  },
  prod: {
    ...base,
    name: 'prod',
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
    terminationProtection: true,
    cache: { ...base.cache, maxDataStorageGb: 50, maxEcpuPerSecond: 1_000_000 },
    worker: {
      ...base.worker,
      maxConcurrency: 20,
      deploymentConfig: LambdaDeploymentConfig.CANARY_10PERCENT_10MINUTES,
      canary: { ...base.worker.canary, minRecords: 100 },
    },
    // One NAT gateway per zone: a zone's external API calls never depend on another zone's gateway.
    network: { maxAzs: 3, natGateways: 3 },
    logRetention: RetentionDays.THREE_MONTHS,
    // One trace in twenty: X-Ray bills per trace recorded, and 5 % of a busy queue is still plenty
    // to read latency and a typical job's path from; failures are found through logs and alarms.
    tracing: { ...base.tracing, samplingRatio: 0.05 },
    alarms: { ...base.alarms, oldestMessageAge: Duration.minutes(5) },
  },
};

/** The config for `-c env=<name>`; refuses unknown names with the list of valid ones. */
export function environmentConfig(
  name: unknown,
  overrides: { alarmEmail?: string; settings?: Readonly<Record<string, string>>; canaryMinRecords?: number; otelLayerArn?: string } = {},
): EnvironmentConfig {
  if (typeof name !== 'string' || !(ENVIRONMENT_NAMES as readonly string[]).includes(name)) {
    throw new Error(`Unknown environment '${String(name)}': pass -c env=<${ENVIRONMENT_NAMES.join('|')}>.`);
  }
  const config = CONFIGS[name as EnvironmentName];
  return {
    ...config,
    settings: { ...config.settings, ...overrides.settings },
    ...(overrides.canaryMinRecords !== undefined
      ? { worker: { ...config.worker, canary: { ...config.worker.canary, minRecords: overrides.canaryMinRecords } } }
      : {}),
    alarms: { ...config.alarms, ...(overrides.alarmEmail ? { email: overrides.alarmEmail } : {}) },
    tracing: { ...config.tracing, ...(overrides.otelLayerArn ? { layerArn: overrides.otelLayerArn } : {}) },
  };
}

/**
 * What a real deployment of each environment must be told, because no default is safe: without
 * its settings a workload's external calls go nowhere (to the DLQ), without an alarm address
 * every alarm goes to no one.
 */
export const REQUIRED_DEPLOY_INPUTS: Readonly<Record<EnvironmentName, readonly ('settings' | 'alarmEmail')[]>> = {
  local: [],
  dev: ['settings'],
  staging: ['settings', 'alarmEmail'],
  prod: ['settings', 'alarmEmail'],
};

/** The value a local deployment gives a setting nobody passed: an address nothing listens on. */
export const UNSET_LOCAL_SETTING = 'http://127.0.0.1:0';

/** The `-c <NAME>=<value>` values of the given settings that were passed (empty ones are not). */
export function contextSettings(context: (key: string) => unknown, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => {
    const value = context(name);
    return typeof value === 'string' && value !== '' ? [[name, value]] : [];
  }));
}

/**
 * The config `cdk synth|deploy` builds from its `-c` context: `env` is required (nothing deploys
 * by default), and so are the environment's {@link REQUIRED_DEPLOY_INPUTS} (every registered
 * workload setting, `-c <NAME>=<value>`; a `*_URL` one must be https), each refused with the flag
 * that supplies it when missing or malformed. `-c otelLayerArn=<layer version ARN>` replaces the
 * OpenTelemetry layer (checked against the stack's region when the stack is built).
 *
 * @param settings - the registry whose workloads' settings it reads, or their names
 * @example
 * const config = deployConfig((key) => app.node.tryGetContext(key), registry);
 */
export function deployConfig(context: (key: string) => unknown, settings: Pick<Registry, 'workloads'> | readonly string[]): EnvironmentConfig {
  const settingNames = 'workloads' in settings ? workloadSettings(settings.workloads) : settings;
  const env = context('env');
  if (env === undefined) {
    throw new Error(`No environment given: pass -c env=<${ENVIRONMENT_NAMES.join('|')}> (nothing is deployed by default).`);
  }
  const text = (key: string) => (typeof context(key) === 'string' && context(key) !== '' ? (context(key) as string) : undefined);
  const inputs = { alarmEmail: text('alarmEmail'), otelLayerArn: text('otelLayerArn') };
  const values = contextSettings(context, settingNames);
  const problems: string[] = [];
  const minRecords = context('canaryMinRecords');
  const canaryMinRecords = minRecords === undefined ? undefined : /^\d+$/.test(String(minRecords).trim()) ? Number(minRecords) : Number.NaN;
  if (canaryMinRecords !== undefined && !(Number.isInteger(canaryMinRecords) && canaryMinRecords >= 0)) {
    problems.push(`-c canaryMinRecords must be a whole number ≥ 0, got '${String(minRecords)}'`);
  }
  const config = environmentConfig(env, { ...inputs, settings: values, ...(problems.length === 0 && canaryMinRecords !== undefined ? { canaryMinRecords } : {}) });
  const required = REQUIRED_DEPLOY_INPUTS[config.name];
  if (required.includes('settings')) {
    for (const name of settingNames) if (!values[name]) problems.push(`-c ${name}=${name.endsWith('_URL') ? 'https://api.example.net' : '<value>'} is required`);
  }
  if (required.includes('alarmEmail') && !inputs.alarmEmail) problems.push('-c alarmEmail=oncall@example.com is required');
  for (const [name, value] of Object.entries(values)) {
    if (name.endsWith('_URL') && config.name !== 'local' && !/^https:\/\/[^/\s]+/.test(value)) problems.push(`-c ${name} must be an https:// URL, got '${value}'`);
  }
  if (inputs.alarmEmail && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(inputs.alarmEmail)) {
    problems.push(`-c alarmEmail must be an email address, got '${inputs.alarmEmail}'`);
  }
  if (problems.length > 0) throw new Error(`env=${config.name}: ${problems.join('; ')}.`);
  return config;
}
