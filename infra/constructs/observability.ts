import { Construct } from 'constructs';
import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import { Alarm, AlarmStatusWidget, ComparisonOperator, MathExpression, Metric, Stats, TreatMissingData, type Dashboard, type IAlarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { BillingMode } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { DefaultDashboardFactory, MonitoringFacade, SnsAlarmActionStrategy } from 'cdk-monitoring-constructs';
import type { EnvironmentConfig } from '../config.ts';
import type { ReliableQueue } from './reliable-queue.ts';
import { DURATION_ALARM_PERCENT_OF_TIMEOUT, type QueueWorker } from './queue-worker.ts';
import type { BallastTables } from './tables.ts';
import { BallastConfigError } from './validation.ts';
import { BALLAST_NAMESPACE, alarmRunbook, segments } from './observability/index.ts';

export interface BallastObservabilityProps {
  /** Names the dashboard (`ballast-<name>`), the alarms' prefix and the runbook commands' `--env`. */
  readonly environmentName: string;
  readonly jobs: ReliableQueue;
  readonly worker: QueueWorker;
  readonly workerTimeout: Duration;
  readonly invalidator: IFunction;
  /** The invalidator's on-failure queue and its DLQ (what the repair could not apply). */
  readonly invalidatorFailures: ReliableQueue;
  /** Consumes `invalidatorFailures`. */
  readonly invalidationRepair: IFunction;
  readonly readApi: IFunction;
  readonly tables: BallastTables;
  /** The serverless cache's name (the `clusterId` dimension of its metrics). */
  readonly cacheName: string;
  /** The event source mappings to chart (their MetricsConfig EventCount metrics), by display name. */
  readonly eventSourceMappings?: readonly { readonly name: string; readonly id: string }[];
  readonly alarms: EnvironmentConfig['alarms'];
  /**
   * The worker version this stack deploys (its `WORKER_VERSION`). The duplicate-rate alarm watches
   * this version's EMF series: a ratio of two series cannot use SEARCH or Metrics Insights in an alarm.
   * @default '0.0.0' - the stack's own default version
   */
  readonly workerVersion?: string;
  /**
   * The worker's POWERTOOLS_SERVICE_NAME, the `service` dimension of its EMF metrics.
   * @default 'ballast-worker'
   */
  readonly workerServiceName?: string;
  /**
   * Read API 5xx responses per 5 minutes at which its error alarm fires.
   * @default 5
   */
  readonly readApiServerErrorsPer5Minutes?: number;
}

const defaults = {
  workerVersion: '0.0.0',
  workerServiceName: 'ballast-worker',
  readApiServerErrorsPer5Minutes: 5,
} as const;

/**
 * Completed records (processed, duplicates answered) of the deployed version in a minute below
 * which its code-fault rate counts as 0: one failing record among three is no verdict on a release.
 */
export const CODE_FAULTS_MIN_RECORDS_PER_MINUTE = 10;
/** Share of the deployed version's records failing with unexpected errors that rolls it back. */
export const CODE_FAULTS_RATE_PERCENT = 5;

/**
 * Everything an operator watches for one environment: one CloudWatch dashboard (`ballast-<env>`)
 * and the alarms, all notifying `topic` on ALARM and OK. Built on cdk-monitoring-constructs'
 * facade; the EMF graphs split by worker version (and reason) through SEARCH, so a new version
 * appears without a deployment. Besides the worker's own per-version alarms, the code-faults rate of
 * the deployed version rolls back a worker canary.
 *
 * @example
 * const observability = new BallastObservability(this, 'Observability', {
 *   environmentName: 'prod', jobs, worker, workerTimeout: Duration.seconds(30), invalidator,
 *   invalidatorFailures, invalidationRepair, readApi, tables, alarms: config.alarms, workerVersion: '1.4.0',
 * });
 * new CfnOutput(this, 'AlarmTopicArn', { value: observability.topic.topicArn });
 */
export class BallastObservability extends Construct {
  /** Receives every alarm's ALARM and OK notifications; `alarms.email` is subscribed when set. */
  readonly topic: Topic;
  /** The environment's dashboard, named `ballast-<env>`. */
  readonly dashboard: Dashboard;
  /** Every alarm of the environment, the worker's own per-version (rollback) alarms included. */
  readonly alarms: IAlarm[];

  constructor(scope: Construct, id: string, props: BallastObservabilityProps) {
    super(scope, id);
    const readApiServerErrorsPer5Minutes = props.readApiServerErrorsPer5Minutes ?? defaults.readApiServerErrorsPer5Minutes;
    this.validate(props, readApiServerErrorsPer5Minutes);
    const env = props.environmentName;
    const worker = {
      service: props.workerServiceName ?? defaults.workerServiceName,
      workerVersion: props.workerVersion ?? defaults.workerVersion,
    };
    const runbook = alarmRunbook({
      environmentName: env,
      oldestMessageAgeSeconds: props.alarms.oldestMessageAge.toSeconds(),
      workerTimeoutSeconds: props.workerTimeout.toSeconds(),
      iteratorAgeSeconds: props.alarms.iteratorAge.toSeconds(),
      lockContentionPer5Minutes: props.alarms.lockContentionPer5Minutes,
      duplicateRatePercent: props.alarms.duplicateRatePercent,
      readApiServerErrorsPer5Minutes,
      workerVersion: worker.workerVersion,
      cacheFallbacksPer5Minutes: props.alarms.cacheFallbacksPer5Minutes,
      cacheThrottledCommandsPer5Minutes: props.alarms.cacheThrottledCommandsPer5Minutes,
      dynamoDbThrottlesPer5Minutes: props.alarms.dynamoDbThrottlesPer5Minutes,
      dynamoDbSystemErrorsPer5Minutes: props.alarms.dynamoDbSystemErrorsPer5Minutes,
    });

    this.topic = new Topic(this, 'Alarms', { displayName: `ballast ${env} alarms`, enforceSSL: true });
    // enforceSSL writes a topic policy, and a topic policy replaces SNS's default one, which is
    // what let CloudWatch publish: without this Allow every alarm action is refused on AWS. The
    // conditions keep the service to this account's alarms (no confused deputy).
    const stack = Stack.of(this);
    this.topic.addToResourcePolicy(new PolicyStatement({
      sid: 'CloudWatchAlarmsPublish',
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [this.topic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }));
    if (props.alarms.email) this.topic.addSubscription(new EmailSubscription(props.alarms.email));

    const dashboards = new DefaultDashboardFactory(this, 'Dashboards', {
      dashboardNamePrefix: `ballast-${env}`,
      createDashboard: true,
      createSummaryDashboard: false,
      createAlarmDashboard: false,
    });
    const facade = new MonitoringFacade(this, 'Monitoring', {
      metricFactoryDefaults: { namespace: BALLAST_NAMESPACE, period: Duration.minutes(1) },
      alarmFactoryDefaults: {
        alarmNamePrefix: `ballast-${env}`,
        actionsEnabled: true,
        action: new SnsAlarmActionStrategy({ onAlarmTopic: this.topic, onOkTopic: this.topic }),
        datapointsToAlarm: 1,
      },
      dashboardFactory: dashboards,
    });
    const quietWhenMissing = { treatMissingDataOverride: TreatMissingData.NOT_BREACHING };
    const atOrAbove = ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD;

    facade
      .addLargeHeader(`ballast ${env}`)
      .monitorSqsQueueWithDlq({
        queue: props.jobs.queue,
        deadLetterQueue: props.jobs.deadLetterQueue,
        humanReadableName: 'Jobs queue',
        alarmFriendlyName: 'JobsQueue',
        addQueueMaxMessageAgeAlarm: {
          Critical: { ...quietWhenMissing, maxAgeInSeconds: props.alarms.oldestMessageAge.toSeconds(), comparisonOperatorOverride: atOrAbove, alarmDescriptionOverride: runbook.oldestMessageAge },
        },
        addDeadLetterQueueMaxSizeAlarm: {
          Critical: { ...quietWhenMissing, maxMessageCount: 0, alarmDescriptionOverride: runbook.deadLetters },
        },
        // The size alarm stays in ALARM while letters wait for replay, so it notifies once; this one
        // counts the worker's DLQ sends per 5 minutes and notifies again on each new arrival.
        addDeadLetterQueueMaxIncomingMessagesAlarm: {
          Critical: { ...quietWhenMissing, maxIncomingMessagesCount: 0, period: Duration.minutes(5), alarmDescriptionOverride: runbook.newDeadLetters },
        },
      })
      .monitorCustom(segments.workerDeliveries({
        queue: props.jobs.queue, alias: props.worker.alias, functionName: props.worker.function.functionName, timeout: props.workerTimeout,
      }))
      .monitorLambdaFunction({
        lambdaFunction: props.worker.alias,
        humanReadableName: 'Worker (live alias)',
        alarmFriendlyName: 'Worker',
        isIterator: false,
        addLatencyP99Alarm: {
          Critical: {
            ...quietWhenMissing,
            maxLatency: Duration.millis(Math.floor((props.workerTimeout.toMilliseconds() * DURATION_ALARM_PERCENT_OF_TIMEOUT) / 100)),
            comparisonOperatorOverride: atOrAbove,
            // 2 of 3 minutes: one slow minute alone is no incident. (The canary rolls back on the new version's own p99.)
            datapointsToAlarm: 2,
            evaluationPeriods: 3,
            alarmDescriptionOverride: runbook.durationP99,
          },
        },
        addThrottlesCountAlarm: {
          Critical: { ...quietWhenMissing, maxErrorCount: 0, period: segments.FIVE_MINUTES, alarmDescriptionOverride: runbook.throttles },
        },
      })
      .monitorCustom(segments.jobsByVersion({
        worker, duplicateRatePercent: props.alarms.duplicateRatePercent, duplicateRateDescription: runbook.duplicateRate,
      }))
      .monitorCustom(segments.locks({
        lockContentionPer5Minutes: props.alarms.lockContentionPer5Minutes, lockContentionDescription: runbook.lockContention,
      }))
      .monitorLambdaFunction({
        lambdaFunction: props.invalidator,
        humanReadableName: 'Cache invalidator (state table stream)',
        alarmFriendlyName: 'Invalidator',
        isIterator: true,
        addMaxIteratorAgeAlarm: {
          Critical: { ...quietWhenMissing, maxAgeInMillis: props.alarms.iteratorAge.toMilliseconds(), comparisonOperatorOverride: atOrAbove, alarmDescriptionOverride: runbook.iteratorAge },
        },
      })
      .monitorSqsQueueWithDlq({
        queue: props.invalidatorFailures.queue,
        deadLetterQueue: props.invalidatorFailures.deadLetterQueue,
        humanReadableName: 'Cache invalidator on-failure queue (drained by the invalidation repair)',
        alarmFriendlyName: 'InvalidatorFailures',
        addQueueMaxSizeAlarm: { Critical: { ...quietWhenMissing, maxMessageCount: 0, alarmDescriptionOverride: runbook.invalidatorFailures } },
        addDeadLetterQueueMaxSizeAlarm: { Critical: { ...quietWhenMissing, maxMessageCount: 0, alarmDescriptionOverride: runbook.invalidationRepairDeadLetters } },
      })
      .monitorLambdaFunction({ lambdaFunction: props.invalidationRepair, humanReadableName: 'Invalidation repair', alarmFriendlyName: 'InvalidationRepair', isIterator: false })
      .monitorCustom(segments.cache({
        cacheName: props.cacheName,
        fallbacksPer5Minutes: props.alarms.cacheFallbacksPer5Minutes,
        throttledCommandsPer5Minutes: props.alarms.cacheThrottledCommandsPer5Minutes,
        descriptions: {
          fallbacks: runbook.cacheFallbacks, breakerOpened: runbook.breakerOpened,
          invalidationsSkipped: runbook.invalidationsSkipped, throttledCommands: runbook.cacheThrottledCommands,
        },
      }))
      .monitorLambdaFunction({ lambdaFunction: props.readApi, humanReadableName: 'Read API', alarmFriendlyName: 'ReadApiFunction', isIterator: false })
      .monitorCustom(segments.readApiResponses({
        readApi: props.readApi, serverErrorsPer5Minutes: readApiServerErrorsPer5Minutes, serverErrorsDescription: runbook.readApiErrors,
      }))
      .monitorDynamoTable(this.tableMonitoring(props.tables.state, 'State table', 'StateTable', props.alarms, runbook))
      .monitorDynamoTable(this.tableMonitoring(props.tables.control, 'Control table (idempotency and locks)', 'ControlTable', props.alarms, runbook))
      .monitorCustom(segments.tableSystemErrors({
        tables: [{ name: 'StateTable', tableName: props.tables.state.tableName }, { name: 'ControlTable', tableName: props.tables.control.tableName }],
        systemErrorsPer5Minutes: props.alarms.dynamoDbSystemErrorsPer5Minutes,
        description: runbook.tableSystemErrors,
      }));
    if (props.eventSourceMappings?.length) facade.monitorCustom(segments.eventSourceMappings({ mappings: props.eventSourceMappings }));

    // The worker's own per-version alarms already roll deployments back; they only need the notifications.
    const notify = new SnsAction(this.topic);
    const workerAlarms = [props.worker.errorsAlarm, props.worker.durationAlarm];
    for (const alarm of workerAlarms) {
      alarm.addAlarmAction(notify);
      alarm.addOkAction(notify);
    }

    // A canary rolls back on failures of *its own code*: records of the deployed version failing
    // with errors ballast did not expect, as a share of its records. Dead letters in general are no
    // signal — insufficient funds or a producer's malformed message say nothing about the new version.
    const ofVersion = (metricName: string, reason?: string) => new Metric({
      namespace: BALLAST_NAMESPACE, metricName, statistic: Stats.SUM, period: Duration.minutes(1),
      dimensionsMap: { service: worker.service, workerVersion: worker.workerVersion, ...(reason ? { reason } : {}) },
    });
    const faults = 'FILL(deadLettered, 0) + FILL(retried, 0)';
    const records = `FILL(processed, 0) + FILL(duplicates, 0) + ${faults}`;
    const codeFaults = new Alarm(this, 'WorkerCodeFaults', {
      alarmName: `ballast-${env}-Worker-CodeFaults-Rollback`,
      alarmDescription: `Worker version ${worker.workerVersion} fails ${CODE_FAULTS_RATE_PERCENT} % or more of its records with unexpected errors `
        + `(a bug, not bad input or a business rule; minutes with fewer than ${CODE_FAULTS_MIN_RECORDS_PER_MINUTE} records count as 0) in 2 of 3 minutes; `
        + `during a deployment this rolls the new version back. First: \`ballast doctor --env ${env}\` (does only the new version fail?), then the worker's error logs.`,
      metric: new MathExpression({
        expression: `IF(${records} >= ${CODE_FAULTS_MIN_RECORDS_PER_MINUTE}, 100 * (${faults}) / (${records}), 0)`,
        usingMetrics: {
          deadLettered: ofVersion('SentToDlq', 'unexpected'),
          retried: ofVersion('JobsRetried', 'unexpected'),
          processed: ofVersion('JobsProcessed'),
          duplicates: ofVersion('DuplicatesSuppressed'),
        },
        period: Duration.minutes(1),
        label: 'records failing with unexpected errors % (deployed version)',
      }),
      threshold: CODE_FAULTS_RATE_PERCENT,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    codeFaults.addAlarmAction(notify);
    codeFaults.addOkAction(notify);
    props.worker.deploymentGroup.addAlarm(codeFaults);
    // It watches the version being deployed; have it updated before that version's traffic shifts.
    props.worker.alias.node.addDependency(codeFaults);

    // Deliveries that failed: the one alarm about the alarms themselves. (A publish the topic's policy
    // refuses never reaches SNS; that shows only in each alarm's history, which `ballast doctor` reads.)
    const notificationsFailed = new Alarm(this, 'AlarmNotificationsFailed', {
      alarmName: `ballast-${env}-AlarmTopic-NotificationsFailed`,
      alarmDescription: runbook.notificationsFailed,
      metric: this.topic.metricNumberOfNotificationsFailed({ period: Duration.minutes(5), statistic: Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    notificationsFailed.addAlarmAction(notify);
    notificationsFailed.addOkAction(notify);

    this.alarms = [...facade.createdAlarms().map((created) => created.alarm), ...workerAlarms, codeFaults, notificationsFailed];
    facade.addWidget(new AlarmStatusWidget({ title: `Alarms (ballast-${env})`, alarms: this.alarms, width: 24, height: 4 }));

    const dashboard = dashboards.dashboard;
    if (!dashboard) throw new BallastConfigError(this, 'the monitoring facade created no dashboard: keep createDashboard: true.');
    this.dashboard = dashboard;
  }

  /** A table's facade monitoring with its read and write throttle alarms. */
  private tableMonitoring(table: BallastTables['state'], humanReadableName: string, alarmFriendlyName: string, alarms: EnvironmentConfig['alarms'], runbook: ReturnType<typeof alarmRunbook>) {
    const throttles = {
      Critical: {
        maxThrottledEventsThreshold: alarms.dynamoDbThrottlesPer5Minutes,
        period: segments.FIVE_MINUTES,
        comparisonOperatorOverride: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
        alarmDescriptionOverride: runbook.tableThrottles(alarmFriendlyName),
      },
    };
    return {
      table, billingMode: BillingMode.PAY_PER_REQUEST, humanReadableName, alarmFriendlyName,
      addReadThrottledEventsCountAlarm: throttles, addWriteThrottledEventsCountAlarm: throttles,
    };
  }

  private validate(props: BallastObservabilityProps, readApiServerErrorsPer5Minutes: number): void {
    const { alarms } = props;
    if (!(alarms.duplicateRatePercent > 0 && alarms.duplicateRatePercent <= 100)) {
      throw new BallastConfigError(this, `alarms.duplicateRatePercent ${alarms.duplicateRatePercent} is outside (0, 100]: `
        + 'give the percentage of jobs seen that may be duplicates before the alarm fires, e.g. 20.');
    }
    const counts = [
      ['alarms.lockContentionPer5Minutes', alarms.lockContentionPer5Minutes], ['readApiServerErrorsPer5Minutes', readApiServerErrorsPer5Minutes],
      ['alarms.cacheFallbacksPer5Minutes', alarms.cacheFallbacksPer5Minutes], ['alarms.cacheThrottledCommandsPer5Minutes', alarms.cacheThrottledCommandsPer5Minutes],
      ['alarms.dynamoDbThrottlesPer5Minutes', alarms.dynamoDbThrottlesPer5Minutes], ['alarms.dynamoDbSystemErrorsPer5Minutes', alarms.dynamoDbSystemErrorsPer5Minutes],
    ] as const;
    for (const [name, value] of counts) {
      if (!Number.isInteger(value) || value < 1) {
        throw new BallastConfigError(this, `${name} ${value} is not a whole number of at least 1: an alarm at 0 would fire on every evaluation.`);
      }
    }
    for (const [name, value] of [['alarms.oldestMessageAge', alarms.oldestMessageAge], ['alarms.iteratorAge', alarms.iteratorAge]] as const) {
      if (value.toSeconds() < 1) throw new BallastConfigError(this, `${name} (${value.toSeconds()} s) must be at least 1 second.`);
    }
    if (alarms.oldestMessageAge.toSeconds() >= props.jobs.retentionPeriod.toSeconds()) {
      throw new BallastConfigError(this, `alarms.oldestMessageAge (${alarms.oldestMessageAge.toSeconds()} s) is not below the jobs queue's `
        + `retention (${props.jobs.retentionPeriod.toSeconds()} s): messages would be dropped before the alarm fires; lower it.`);
    }
  }
}
