import { Construct } from 'constructs';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Alias, MetricType } from 'aws-cdk-lib/aws-lambda';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Alarm, ComparisonOperator, MathExpression, Metric, Stats, TreatMissingData, type IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaDeploymentConfig, LambdaDeploymentGroup, type ILambdaDeploymentConfig } from 'aws-cdk-lib/aws-codedeploy';
import type { ISecurityGroup, IVpc } from 'aws-cdk-lib/aws-ec2';
import { BallastFunction } from './ballast-function.ts';
import { minimumVisibilityTimeoutSeconds, type ReliableQueue } from './reliable-queue.ts';
import type { FunctionTracing } from './tracing.ts';
import { BallastConfigError } from './validation.ts';

export interface QueueWorkerProps {
  /** Its name in ballast (its default service name), e.g. `'worker'`. */
  readonly functionName: string;
  /**
   * The file exporting the worker's `handler` (the stack generates one for its registry).
   * @default - ballast's own `functions/<functionName>/index`
   */
  readonly entry?: string;
  /**
   * The project whose `package-lock.json` pins what its functions bundle.
   * @default - the nearest directory at or above the working directory with a `package-lock.json`
   */
  readonly projectRoot?: string;
  /** The queue it consumes; its visibility timeout must cover 6 × `timeout` + `maxBatchingWindow`. */
  readonly queue: ReliableQueue;
  /** Version string stamped on every log line and metric (`WORKER_VERSION`). */
  readonly workerVersion: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default 10 */
  readonly batchSize?: number;
  /** @default Duration.seconds(0) */
  readonly maxBatchingWindow?: Duration;
  /**
   * Concurrent invocations the mapping may run (2–1000); caps the load on DynamoDB and external APIs.
   * Refused together with `provisionedPollers`, which scale the mapping by pollers instead.
   * @default 10 - unless `provisionedPollers` is set
   */
  readonly maxConcurrency?: number;
  /**
   * Provisioned mode for the SQS mapping: pollers kept warm (minimum, 2–200) and the most it scales
   * to (maximum, up to 2,000), for bursts that must not wait for Lambda's poller scaling. Billed
   * per event poller unit.
   * @default - on-demand polling, capped by `maxConcurrency`
   */
  readonly provisionedPollers?: { readonly minimum: number; readonly maximum: number };
  /** @default {} */
  readonly environment?: Record<string, string>;
  /** @default - not in a VPC */
  readonly vpc?: IVpc;
  /** @default - none */
  readonly securityGroups?: ISecurityGroup[];
  /**
   * How traffic moves to a new version.
   * @default LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES
   */
  readonly deploymentConfig?: ILambdaDeploymentConfig;
  /**
   * What rolls a new version back, judged on that version's own invocations (the alias's
   * `ExecutedVersion` metrics), never on the old version still taking the rest of the traffic.
   * @default - see {@link CanaryProps}
   */
  readonly canary?: CanaryProps;
  /**
   * Retention of the worker's and its deployment hooks' log groups.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * What happens to those log groups when they leave the stack.
   * @default RemovalPolicy.DESTROY
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * OpenTelemetry of the worker and its deployment hooks (see BallastFunctionProps).
   * @default - not traced by OpenTelemetry
   */
  readonly tracing?: FunctionTracing;
  /**
   * Alarms (besides the worker's own per-version alarms) that roll a deployment back.
   * @default []
   */
  readonly rollbackAlarms?: IAlarm[];
  /**
   * The command the alarms' descriptions tell on-call to run first.
   * @default 'ballast doctor'
   */
  readonly doctorCommand?: string;
}

/** How a canary judges the new version. */
export interface CanaryProps {
  /**
   * Failed invocations (crashes, timeouts, thrown batches) as a percentage of the new version's
   * invocations in a minute; 2 such minutes out of 3 roll it back.
   * @default 5
   */
  readonly errorRatePercent?: number;
  /**
   * Invocations of the new version in a minute below which its error rate counts as 0: one thrown
   * batch among three invocations is noise, not a verdict.
   * @default 10
   */
  readonly minInvocationsPerMinute?: number;
  /**
   * Records the new version must complete (processed or answered as duplicates) during the
   * deployment before it is promoted: a post-traffic hook counts them and fails the deployment
   * (CodeDeploy rolls back to the old version) when there are fewer. On an idle queue that means
   * no promotion: send traffic and redeploy, or set 0 to promote on the pre-traffic readiness
   * check alone. 0 creates no post-traffic hook.
   * @default 0
   */
  readonly minRecords?: number;
  /**
   * How long the post-traffic hook keeps re-reading the count for EMF datapoints that arrive late.
   * @default Duration.minutes(3)
   */
  readonly settleTime?: Duration;
}

const canaryDefaults = { errorRatePercent: 5, minInvocationsPerMinute: 10, minRecords: 0, settleTime: Duration.minutes(3) };

/**
 * Share of the worker timeout at which p99 duration alarms: the new version's rolls it back, the
 * whole alias's (BallastObservability) notifies.
 */
export const DURATION_ALARM_PERCENT_OF_TIMEOUT = 80;

/**
 * An SQS worker with safe rollouts: the function, a `live` alias that the event source mapping
 * invokes (ReportBatchItemFailures, max concurrency or provisioned pollers, batch size and window,
 * event-count metrics), and a CodeDeploy canary on the alias that rolls back on the new version's
 * own error rate and p99 duration. A pre-traffic hook invokes the new version with a readiness
 * event first: it must reach its tables, queues and cache and parse a sample of every envelope
 * version it supports, or no traffic moves. With `canary.minRecords`, a post-traffic hook refuses to
 * promote a version that completed too few records.
 */
export class QueueWorker extends Construct {
  readonly function: BallastFunction;
  readonly alias: Alias;
  /** The event source mapping's id (`EventSourceMappingUUID` of its metrics). */
  readonly eventSourceMappingId: string;
  /** The new version's error rate (per-version invocations); rolls a deployment back. */
  readonly errorsAlarm: Alarm;
  /** The new version's p99 duration against the timeout; rolls a deployment back. */
  readonly durationAlarm: Alarm;
  readonly deploymentGroup: LambdaDeploymentGroup;
  readonly preTrafficCheck: BallastFunction;
  /** Present when `canary.minRecords` > 0. */
  readonly postTrafficCheck?: BallastFunction;

  constructor(scope: Construct, id: string, props: QueueWorkerProps) {
    super(scope, id);
    const timeout = props.timeout ?? Duration.seconds(30);
    const window = props.maxBatchingWindow ?? Duration.seconds(0);
    const needed = minimumVisibilityTimeoutSeconds(timeout, window);
    const visibilitySeconds = props.queue.visibilityTimeout.toSeconds();
    if (visibilitySeconds < needed) {
      throw new BallastConfigError(this, `the queue's visibility timeout (${visibilitySeconds} s) is below 6 × timeout `
        + `(${timeout.toSeconds()} s) + batching window (${window.toSeconds()} s) = ${needed} s: build the ReliableQueue with `
        + `consumerTimeout: Duration.seconds(${timeout.toSeconds()}) and maxBatchingWindow: Duration.seconds(${window.toSeconds()}).`);
    }
    const scaling = this.scaling(props);
    const canary = { ...canaryDefaults, ...props.canary };
    this.validateCanary(canary);
    const doctor = props.doctorCommand ?? 'ballast doctor';

    this.function = new BallastFunction(this, 'Function', {
      functionName: props.functionName,
      entry: props.entry,
      projectRoot: props.projectRoot,
      timeout,
      memorySize: props.memorySize,
      vpc: props.vpc,
      securityGroups: props.securityGroups,
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
      tracing: props.tracing,
      environment: {
        WORKER_VERSION: props.workerVersion,
        MAX_RECEIVE_COUNT: String(props.queue.maxReceiveCount),
        // Don't start a record with less than a fifth of the timeout (at most 5 s) left.
        DEADLINE_MARGIN_MS: String(Math.min(5_000, Math.floor(timeout.toMilliseconds() / 5))),
        DEAD_LETTER_QUEUE_URL: props.queue.deadLetterQueue.queueUrl,
        ...props.environment,
      },
    });
    this.alias = new Alias(this, 'Live', { aliasName: 'live', version: this.function.currentVersion });
    const source = new SqsEventSource(props.queue.queue, {
      batchSize: props.batchSize ?? 10,
      maxBatchingWindow: window.toSeconds() > 0 ? window : undefined,
      ...scaling,
      reportBatchItemFailures: true,
      metricsConfig: { metrics: [MetricType.EVENT_COUNT] },
    });
    this.alias.addEventSource(source);
    this.eventSourceMappingId = source.eventSourceMappingId;
    props.queue.deadLetterQueue.grantSendMessages(this.function);
    // A record still waiting for a lock on its last receive goes back to its queue as a new message
    // (`requeuedMessage`): the worker sends to its own queue for that alone.
    props.queue.queue.grantSendMessages(this.function);

    // Lambda's metrics of the alias for the version it executed: during a canary the new version's
    // numbers alone, whatever the old version is doing with the other 90 %.
    const ofNewVersion = (metricName: string, statistic: string) => new Metric({
      namespace: 'AWS/Lambda',
      metricName,
      statistic,
      period: Duration.minutes(1),
      dimensionsMap: {
        FunctionName: this.function.functionName,
        Resource: `${this.function.functionName}:${this.alias.aliasName}`,
        ExecutedVersion: this.function.currentVersion.version,
      },
    });
    const twoOfThreeMinutes = {
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    };
    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmDescription: `The deployed worker version fails ${canary.errorRatePercent} % or more of its invocations (crashes, timeouts, `
        + `thrown batches; minutes with fewer than ${canary.minInvocationsPerMinute} invocations count as 0) in 2 of 3 minutes; rolls `
        + `a deployment of it back. First: \`${doctor}\` (errors by worker version), then the worker's error logs.`,
      metric: new MathExpression({
        expression: `IF(FILL(invocations, 0) >= ${canary.minInvocationsPerMinute}, 100 * FILL(errors, 0) / FILL(invocations, 0), 0)`,
        usingMetrics: { errors: ofNewVersion('Errors', Stats.SUM), invocations: ofNewVersion('Invocations', Stats.SUM) },
        period: Duration.minutes(1),
        label: 'failed invocations % (deployed version)',
      }),
      threshold: canary.errorRatePercent,
      ...twoOfThreeMinutes,
    });
    const slowMs = Math.floor((timeout.toMilliseconds() * DURATION_ALARM_PERCENT_OF_TIMEOUT) / 100);
    this.durationAlarm = new Alarm(this, 'DurationAlarm', {
      alarmDescription: `The deployed worker version's p99 duration is at or above ${DURATION_ALARM_PERCENT_OF_TIMEOUT} % of its `
        + `${timeout.toSeconds()} s timeout in 2 of 3 minutes: its batches are about to be cut off and redelivered; rolls a deployment `
        + `of it back. First: \`${doctor}\` (duration by version; dependency latency).`,
      metric: ofNewVersion('Duration', Stats.p(99)),
      threshold: slowMs,
      ...twoOfThreeMinutes,
    });
    // The alarms follow the new version's number; have them updated before its traffic shifts.
    this.alias.node.addDependency(this.errorsAlarm, this.durationAlarm);

    this.preTrafficCheck = new BallastFunction(this, 'PreTrafficCheck', {
      functionName: 'pre-traffic-check',
      projectRoot: props.projectRoot,
      timeout: Duration.seconds(60),
      memorySize: 256,
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
      tracing: props.tracing,
      environment: { TARGET_VERSION_ARN: this.function.currentVersion.functionArn },
    });
    this.function.currentVersion.grantInvoke(this.preTrafficCheck);

    if (canary.minRecords > 0) {
      this.postTrafficCheck = new BallastFunction(this, 'PostTrafficCheck', {
        functionName: 'post-traffic-check',
        projectRoot: props.projectRoot,
        timeout: canary.settleTime.plus(Duration.minutes(1)),
        memorySize: 256,
        logRetention: props.logRetention,
        logRemovalPolicy: props.logRemovalPolicy,
        tracing: props.tracing,
        environment: {
          TARGET_WORKER_VERSION: props.workerVersion,
          TARGET_SERVICE_NAME: props.environment?.POWERTOOLS_SERVICE_NAME ?? 'ballast-worker',
          MIN_RECORDS: String(canary.minRecords),
          SETTLE_SECONDS: String(canary.settleTime.toSeconds()),
        },
      });
      // GetMetricData supports no resource-level permissions.
      this.postTrafficCheck.addToRolePolicy(new PolicyStatement({ actions: ['cloudwatch:GetMetricData'], resources: ['*'] }));
    }

    this.deploymentGroup = new LambdaDeploymentGroup(this, 'Deployment', {
      alias: this.alias,
      deploymentConfig: props.deploymentConfig ?? LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
      alarms: [this.errorsAlarm, this.durationAlarm, ...(props.rollbackAlarms ?? [])],
      preHook: this.preTrafficCheck,
      ...(this.postTrafficCheck ? { postHook: this.postTrafficCheck } : {}),
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    });
    this.postTrafficCheck?.addToRolePolicy(new PolicyStatement({
      actions: ['codedeploy:GetDeployment'],
      resources: [this.deploymentGroup.deploymentGroupArn],
    }));
  }

  /** Max concurrency or provisioned pollers (never both), each within Lambda's ranges. */
  private scaling(props: QueueWorkerProps): { maxConcurrency?: number; provisionedPollerConfig?: { minimumPollers: number; maximumPollers: number } } {
    const pollers = props.provisionedPollers;
    if (pollers) {
      if (props.maxConcurrency !== undefined) {
        throw new BallastConfigError(this, `maxConcurrency (${props.maxConcurrency}) and provisionedPollers cannot be combined: in provisioned mode `
          + 'Lambda scales the mapping by its pollers, so remove maxConcurrency (or remove provisionedPollers to keep the cap).');
      }
      const { minimum, maximum } = pollers;
      if (!Number.isInteger(minimum) || minimum < 2 || minimum > 200) {
        throw new BallastConfigError(this, `provisionedPollers.minimum ${minimum} is outside 2–200, Lambda's range for SQS mappings.`);
      }
      if (!Number.isInteger(maximum) || maximum < minimum || maximum > 2_000) {
        throw new BallastConfigError(this, `provisionedPollers.maximum ${maximum} must be a whole number from minimum (${minimum}) to 2,000.`);
      }
      return { provisionedPollerConfig: { minimumPollers: minimum, maximumPollers: maximum } };
    }
    const maxConcurrency = props.maxConcurrency ?? 10;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
      throw new BallastConfigError(this, `maxConcurrency ${maxConcurrency} is outside 2–1000 (Lambda's limits for SQS mappings): pick a value in range.`);
    }
    return { maxConcurrency };
  }

  private validateCanary(canary: typeof canaryDefaults): void {
    if (!(canary.errorRatePercent > 0 && canary.errorRatePercent <= 100)) {
      throw new BallastConfigError(this, `canary.errorRatePercent ${canary.errorRatePercent} is outside (0, 100]: give the share of failed invocations that rolls back, e.g. 5.`);
    }
    if (!Number.isInteger(canary.minInvocationsPerMinute) || canary.minInvocationsPerMinute < 1) {
      throw new BallastConfigError(this, `canary.minInvocationsPerMinute ${canary.minInvocationsPerMinute} must be a whole number ≥ 1: below it a minute's error rate counts as 0.`);
    }
    if (!Number.isInteger(canary.minRecords) || canary.minRecords < 0) {
      throw new BallastConfigError(this, `canary.minRecords ${canary.minRecords} must be a whole number ≥ 0 (0: no post-traffic check).`);
    }
    const settle = canary.settleTime.toSeconds();
    if (settle < 60 || settle > 840) {
      throw new BallastConfigError(this, `canary.settleTime (${settle} s) must be 1–14 minutes: EMF datapoints take a minute or two to arrive, and the hook runs at most 15 minutes.`);
    }
  }
}
