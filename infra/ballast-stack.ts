import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { MetricType, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { UNSET_LOCAL_SETTING, type EnvironmentConfig } from './config.ts';
import { BallastFunction } from './constructs/ballast-function.ts';
import { BallastCache } from './constructs/cache.ts';
import { BallastNetwork } from './constructs/network.ts';
import { BallastObservability } from './constructs/observability.ts';
import { QueueWorker } from './constructs/queue-worker.ts';
import { ReliableQueue } from './constructs/reliable-queue.ts';
import { functionTracing } from './constructs/tracing.ts';
import { BallastTables } from './constructs/tables.ts';
import { BallastConfigError, checkIdempotencyWindow } from './constructs/validation.ts';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workloadEntities, workloadSettings, type Registry, type Workload } from '../shared/workloads/index.ts';
import { codeVersion } from './code-version.ts';
import { findProjectRoot, frameworkModule, writeFunctionEntry } from './constructs/function-entry.ts';

/** Where `ballast dev` and the other local tools find a synthesized stack's registry (manifest metadata, not in the template). */
export const REGISTRY_METADATA = 'ballast:registry';

export interface BallastStackProps extends StackProps {
  /** The environment's settings, usually `deployConfig(context, registry)` from `cdk -c env=<name>`. */
  readonly config: EnvironmentConfig;
  /**
   * The app's workloads (`defineRegistry` in the module that exports it as `registry`): each
   * function is bundled from that module with only what it uses (the worker with every
   * workload's jobs, the others with their declarations); their cached entities decide the cache
   * user's keys and the read routes, their settings the worker's environment.
   */
  readonly registry: Registry;
  /**
   * The project whose `package-lock.json` pins what the functions bundle.
   * @default - the nearest directory at or above the registry module with a `package-lock.json`
   */
  readonly projectRoot?: string;
  /**
   * Version stamped on the worker's logs and metrics (`-c workerVersion=...`).
   * @default - the project's package version + a hash of what the worker's bundle contains
   */
  readonly workerVersion?: string;
}

/** The whole of ballast in one stack per environment. */
export class BallastStack extends Stack {
  readonly tables: BallastTables;
  readonly jobs: ReliableQueue;
  readonly worker: QueueWorker;
  readonly invalidator: BallastFunction;
  /** The invalidator's on-failure destination; the invalidation repair drains it. */
  readonly invalidatorFailures: ReliableQueue;
  /** Re-applies the stream batches the invalidator gave up on. */
  readonly invalidationRepair: BallastFunction;
  readonly readApi: BallastFunction;
  readonly observability: BallastObservability;
  /** The workloads' settings as the worker gets them (environment variables): another worker of theirs needs them too. */
  readonly settings: Readonly<Record<string, string>>;
  /** The worker's generated entry (the registry's jobs in ballast's pipeline): another `QueueWorker` of the same jobs takes it as `entry`. */
  readonly workerEntry: string;
  /** The project whose lock file pins the bundles; another function of the app is built from it too. */
  readonly projectRoot: string;

  constructor(scope: Construct, id: string, props: BallastStackProps) {
    super(scope, id, { ...props, terminationProtection: props.terminationProtection ?? props.config.terminationProtection });
    const { config, registry } = props;
    const projectRoot = props.projectRoot ?? findProjectRoot(dirname(registry.module));
    const entry = (name: string, factory: string, defaults?: readonly string[]) => writeFunctionEntry(projectRoot, {
      name, module: frameworkModule(`functions/${name}/index`), factory, registry: registry.module, defaults,
    });
    const workerEntry = entry('worker', 'workerHandler', registry.workloads.map((workload) => modulePathOf(workload.jobs)));
    const workerVersion = props.workerVersion ?? codeVersion(workerEntry, projectRoot);
    this.workerEntry = workerEntry;
    this.projectRoot = projectRoot;
    this.node.addMetadata(REGISTRY_METADATA, registry.module);
    checkIdempotencyWindow(this, {
      idempotencyRetention: config.idempotencyRetention,
      queueRetention: config.queue.retentionPeriod,
      deadLetterRetention: config.queue.deadLetterRetentionPeriod,
      replayWindow: config.replayWindow,
    });

    this.settings = workerSettings(this, config, registry.workloads);
    this.tables = new BallastTables(this, 'Tables', { removalPolicy: config.removalPolicy, deletionProtection: config.deletionProtection });
    const network = new BallastNetwork(this, 'Network', { ...config.network, flowLogRetention: config.logRetention, removalPolicy: config.removalPolicy });
    const cache = new BallastCache(this, 'Cache', {
      vpc: network.vpc, clientSecurityGroup: network.functionSecurityGroup, removalPolicy: config.removalPolicy, ...config.cache,
      entities: workloadEntities(registry.workloads).map((entity) => entity.name),
    });
    /** What every function of the stack shares: the VPC, its log settings and its OpenTelemetry layer. */
    const functionDefaults = {
      projectRoot,
      logRetention: config.logRetention, logRemovalPolicy: config.removalPolicy, vpc: network.vpc, securityGroups: [network.functionSecurityGroup],
      tracing: functionTracing(this, config.tracing),
    };
    /** The functions that use the entity cache find it, and the state table, here. */
    const cacheEnvironment = (service: string) => ({
      STATE_TABLE_NAME: this.tables.state.tableName, ...cache.environment, POWERTOOLS_SERVICE_NAME: service,
    });

    this.jobs = new ReliableQueue(this, 'Jobs', {
      consumerTimeout: config.worker.timeout,
      maxBatchingWindow: config.worker.maxBatchingWindow,
      maxReceiveCount: config.queue.maxReceiveCount,
      retentionPeriod: config.queue.retentionPeriod,
      deadLetterRetentionPeriod: config.queue.deadLetterRetentionPeriod,
      removalPolicy: config.removalPolicy,
    });
    this.worker = new QueueWorker(this, 'Worker', {
      functionName: 'worker',
      entry: workerEntry,
      queue: this.jobs,
      workerVersion,
      timeout: config.worker.timeout,
      memorySize: config.worker.memorySize,
      batchSize: config.worker.batchSize,
      maxBatchingWindow: config.worker.maxBatchingWindow,
      maxConcurrency: config.worker.maxConcurrency,
      provisionedPollers: config.worker.provisionedPollers,
      deploymentConfig: config.worker.deploymentConfig,
      canary: config.worker.canary,
      doctorCommand: `ballast doctor --env ${config.name}`,
      ...functionDefaults,
      environment: {
        STATE_TABLE_NAME: this.tables.state.tableName,
        CONTROL_TABLE_NAME: this.tables.control.tableName,
        ...this.settings,
        LOCK_LEASE_MS: String(config.worker.lockLease.toMilliseconds()),
        IDEMPOTENCY_RETENTION_SECONDS: String(config.idempotencyRetention.toSeconds()),
        // Only its readiness probe pings the cache, with the same client settings as the others.
        ...cache.environment,
        POWERTOOLS_SERVICE_NAME: 'ballast-worker',
      },
    });
    this.tables.grantJobTransactions(this.worker.function);
    cache.grantConnect(this.worker.function);

    // The invalidator's on-failure destination is a work queue like any other: the repair consumes
    // it, and what the repair cannot apply either ends in the queue's own (alarmed) DLQ.
    this.invalidatorFailures = new ReliableQueue(this, 'InvalidatorFailures', {
      consumerTimeout: config.invalidationRepair.timeout,
      maxReceiveCount: config.invalidationRepair.maxReceiveCount,
      // The repair never dead-letters by itself: SQS's redrive is the only way to its DLQ.
      redriveBackstop: 0,
      retentionPeriod: config.queue.retentionPeriod,
      deadLetterRetentionPeriod: config.queue.deadLetterRetentionPeriod,
      removalPolicy: config.removalPolicy,
    });
    this.invalidator = new BallastFunction(this, 'CacheInvalidator', {
      functionName: 'cache-invalidator',
      entry: entry('cache-invalidator', 'invalidatorHandler'),
      timeout: config.invalidator.timeout,
      memorySize: 256,
      ...functionDefaults,
      environment: cacheEnvironment('ballast-cache-invalidator'),
    });
    cache.grantConnect(this.invalidator);
    const invalidations = new DynamoEventSource(this.tables.state, {
      startingPosition: StartingPosition.LATEST,
      batchSize: config.invalidator.batchSize,
      bisectBatchOnError: true,
      retryAttempts: config.invalidator.retryAttempts,
      maxRecordAge: config.invalidator.maxRecordAge,
      onFailure: new SqsDlq(this.invalidatorFailures.queue),
      reportBatchItemFailures: true,
      metricsConfig: { metrics: [MetricType.EVENT_COUNT] },
    });
    this.invalidator.addEventSource(invalidations);

    this.invalidationRepair = new BallastFunction(this, 'InvalidationRepair', {
      functionName: 'invalidation-repair',
      entry: entry('invalidation-repair', 'repairHandler'),
      timeout: config.invalidationRepair.timeout,
      memorySize: 256,
      ...functionDefaults,
      environment: cacheEnvironment('ballast-invalidation-repair'),
    });
    const failedInvalidations = new SqsEventSource(this.invalidatorFailures.queue, {
      batchSize: config.invalidationRepair.batchSize,
      maxConcurrency: config.invalidationRepair.maxConcurrency,
      reportBatchItemFailures: true,
      metricsConfig: { metrics: [MetricType.EVENT_COUNT] },
    });
    this.invalidationRepair.addEventSource(failedInvalidations);
    // Reads failed batches back from the stream, and the table for the full-repair fallback; no writes.
    this.tables.state.grantStream(this.invalidationRepair, 'dynamodb:GetShardIterator', 'dynamodb:GetRecords');
    this.tables.grantStateReads(this.invalidationRepair);
    cache.grantConnect(this.invalidationRepair);

    this.readApi = new BallastFunction(this, 'ReadApi', {
      functionName: 'read-api',
      entry: entry('read-api', 'readApiHandler'),
      timeout: config.readApi.timeout,
      ...functionDefaults,
      environment: cacheEnvironment('ballast-read-api'),
    });
    this.tables.grantStateReads(this.readApi);
    cache.grantConnect(this.readApi);
    const readApiUrl = this.readApi.addFunctionUrl({ authType: config.readApi.authType });

    // What the functions may reach through the VPC endpoints: this stack's tables and queues only.
    // The functions' table calls are the worker's (the others only GetItem on the state table).
    for (const { table, actions } of this.tables.jobTransactionAccess) network.allowTables([table.tableArn], actions);
    network.allowQueues([this.jobs, this.invalidatorFailures].flatMap((queue) => [queue.queue.queueArn, queue.deadLetterQueue.queueArn]));

    this.observability = new BallastObservability(this, 'Observability', {
      environmentName: config.name,
      jobs: this.jobs,
      worker: this.worker,
      workerTimeout: config.worker.timeout,
      invalidator: this.invalidator,
      invalidatorFailures: this.invalidatorFailures,
      invalidationRepair: this.invalidationRepair,
      readApi: this.readApi,
      tables: this.tables,
      cacheName: cache.cacheName,
      eventSourceMappings: [
        { name: 'Jobs → worker', id: this.worker.eventSourceMappingId },
        { name: 'State stream → cache invalidator', id: invalidations.eventSourceMappingId },
        { name: 'Failed invalidations → repair', id: failedInvalidations.eventSourceMappingId },
      ],
      alarms: config.alarms,
      workerVersion,
    });

    const outputs: Record<string, string> = {
      JobsQueueUrl: this.jobs.queue.queueUrl,
      JobsDeadLetterQueueUrl: this.jobs.deadLetterQueue.queueUrl,
      StateTableName: this.tables.state.tableName,
      ControlTableName: this.tables.control.tableName,
      WorkerFunctionName: this.worker.function.functionName,
      InvalidatorFailureQueueUrl: this.invalidatorFailures.queue.queueUrl,
      InvalidatorFailureDeadLetterQueueUrl: this.invalidatorFailures.deadLetterQueue.queueUrl,
      InvalidatorFunctionName: this.invalidator.functionName,
      InvalidationRepairFunctionName: this.invalidationRepair.functionName,
      ReadApiUrl: readApiUrl.url,
      CacheUrl: cache.url,
      CacheName: cache.cacheName,
      CacheUserId: cache.userId,
      AlarmTopicArn: this.observability.topic.topicArn,
    };
    for (const [name, value] of Object.entries(outputs)) new CfnOutput(this, name, { value });
  }
}

/**
 * The worker's value of every workload setting (`config.settings`); a local stack gives a missing
 * one an address nothing listens on, any other refuses to synthesize without it.
 */
function workerSettings(scope: Construct, config: EnvironmentConfig, workloads: readonly Workload[]): Record<string, string> {
  return Object.fromEntries(workloadSettings(workloads).map((name) => {
    const value = config.settings[name] ?? (config.name === 'local' ? UNSET_LOCAL_SETTING : undefined);
    if (value === undefined) throw new BallastConfigError(scope, `the workload setting ${name} has no value: deploy with -c ${name}=<value>.`);
    return [name, value];
  }));
}

/** A workload module's path (`jobs`, `local`): a file URL or an absolute path. */
function modulePathOf(module: URL | string): string {
  return module instanceof URL || module.startsWith('file:') ? fileURLToPath(module) : module;
}
