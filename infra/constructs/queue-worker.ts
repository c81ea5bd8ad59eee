import { Construct } from 'constructs';
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Alias } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Alarm, ComparisonOperator, TreatMissingData, type IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { LambdaDeploymentConfig, LambdaDeploymentGroup, type ILambdaDeploymentConfig } from 'aws-cdk-lib/aws-codedeploy';
import type { ISecurityGroup, IVpc } from 'aws-cdk-lib/aws-ec2';
import { BallastFunction } from './ballast-function.ts';
import { minimumVisibilityTimeoutSeconds, type ReliableQueue } from './reliable-queue.ts';
import { BallastConfigError } from './validation.ts';

export interface QueueWorkerProps {
  /** Folder under `functions/` with the worker's `index.ts`. */
  readonly functionName: string;
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
   * Concurrent invocations the mapping may run (2–1000); caps the load on DynamoDB and partners.
   * @default 10
   */
  readonly maxConcurrency?: number;
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
   * Retention of the worker's and the pre-traffic check's log groups.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * What happens to those log groups when they leave the stack.
   * @default RemovalPolicy.DESTROY
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * Alarms (besides the worker's own error alarm) that roll a deployment back.
   * @default []
   */
  readonly rollbackAlarms?: IAlarm[];
}

/**
 * An SQS worker with safe rollouts: the function, a `live` alias that the event source mapping
 * invokes (ReportBatchItemFailures, max concurrency, batch size and window), and a CodeDeploy
 * canary on the alias that rolls back on alarms. A pre-traffic hook invokes the new version with a
 * readiness event first: it must reach its tables, queues and cache and parse a sample of every
 * envelope version it supports, or no traffic moves.
 */
export class QueueWorker extends Construct {
  readonly function: BallastFunction;
  readonly alias: Alias;
  readonly errorsAlarm: Alarm;
  readonly deploymentGroup: LambdaDeploymentGroup;
  readonly preTrafficCheck: BallastFunction;

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
    const maxConcurrency = props.maxConcurrency ?? 10;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
      throw new BallastConfigError(this, `maxConcurrency ${maxConcurrency} is outside 2–1000 (Lambda's limits for SQS mappings): pick a value in range.`);
    }

    this.function = new BallastFunction(this, 'Function', {
      functionName: props.functionName,
      timeout,
      memorySize: props.memorySize,
      vpc: props.vpc,
      securityGroups: props.securityGroups,
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
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
    this.alias.addEventSource(new SqsEventSource(props.queue.queue, {
      batchSize: props.batchSize ?? 10,
      maxBatchingWindow: window.toSeconds() > 0 ? window : undefined,
      maxConcurrency,
      reportBatchItemFailures: true,
    }));
    props.queue.deadLetterQueue.grantSendMessages(this.function);

    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmDescription: 'Worker invocations failing (a thrown error returns the whole batch); rolls back a deployment in progress. First: `ballast doctor` (errors by worker version), then the worker\'s error logs.',
      metric: this.alias.metricErrors({ period: Duration.minutes(1) }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    this.preTrafficCheck = new BallastFunction(this, 'PreTrafficCheck', {
      functionName: 'pre-traffic-check',
      timeout: Duration.seconds(60),
      memorySize: 256,
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
      environment: { TARGET_VERSION_ARN: this.function.currentVersion.functionArn },
    });
    this.function.currentVersion.grantInvoke(this.preTrafficCheck);

    this.deploymentGroup = new LambdaDeploymentGroup(this, 'Deployment', {
      alias: this.alias,
      deploymentConfig: props.deploymentConfig ?? LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
      alarms: [this.errorsAlarm, ...(props.rollbackAlarms ?? [])],
      preHook: this.preTrafficCheck,
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    });
  }
}
