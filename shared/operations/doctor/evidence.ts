import { setTimeout as sleep } from 'node:timers/promises';
import type { CachedEntity, ReconcileReport } from '../../cache/index.ts';
import { METRICS } from '../../observability/index.ts';
import type { OpsContext } from '../context.ts';
import { cacheTarget, checkCache } from '../cache.ts';
import { scanControlTable, type ControlTableScan } from '../control-table.ts';
import { listDeadLetters, type DlqListing } from '../dlq.ts';
import type { AlarmNotifications, AlarmState, MetricsAnswer } from '../metrics.ts';
import { queueCounts, queueName, type QueueCounts } from '../queues.ts';
import { metricsReader, queueStatus, type QueueStatus } from '../status.ts';
import { withDefaults } from '../../options/index.ts';

export interface DoctorOptions {
  /** Seconds between the two queue samples that show growth or progress. @default 5 */
  readonly sampleSeconds?: number;
  /** Metrics window. @default 15 */
  readonly windowMinutes?: number;
  /** Oldest message age that counts as a stuck backlog. @default 300 */
  readonly maxOldestAgeSeconds?: number;
  /** Cache entries compared with the table. @default 50 */
  readonly cacheSample?: number;
  /** DLQ messages sampled for reasons. @default 200 */
  readonly dlqSample?: number;
  /** A lease this far past is flagged (a heartbeat in flight is not). @default 5000 */
  readonly lockGraceMs?: number;
  /**
   * Dead-letter reasons that mean an external API refused requests (the workloads declare them),
   * which the dependency check reports as a dependency changing behaviour.
   * @default []
   */
  readonly dependencyRejectionReasons?: readonly string[];
  /** The cached entities the cache sample covers (the workloads register them). @default [] - no cache sample */
  readonly cachedEntities?: readonly CachedEntity[];
}

export const DOCTOR_DEFAULTS = {
  sampleSeconds: 5, windowMinutes: 15, maxOldestAgeSeconds: 300, cacheSample: 50, dlqSample: 200, lockGraceMs: 5_000,
  dependencyRejectionReasons: [] as readonly string[], cachedEntities: [] as readonly CachedEntity[],
};

/** Reads that may fail: the value, or why it is not known. */
export type Maybe<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

/** Everything the ten checks judge, gathered once. */
export interface Evidence {
  readonly options: typeof DOCTOR_DEFAULTS;
  readonly jobsBefore: QueueCounts;
  readonly jobs: QueueStatus;
  readonly dlqBefore: QueueCounts;
  readonly dlq: QueueCounts;
  readonly invalidatorFailures: QueueCounts;
  /** Maximum stream iterator age of the invalidator over the window, in ms (AWS/Lambda IteratorAge). */
  readonly invalidatorIteratorAgeMs: MetricsAnswer<number | undefined>;
  readonly received: MetricsAnswer<number | undefined>;
  readonly deleted: MetricsAnswer<number | undefined>;
  readonly processedByVersion: MetricsAnswer<Record<string, number>>;
  readonly duplicatesByVersion: MetricsAnswer<Record<string, number>>;
  readonly retriesByReason: MetricsAnswer<Record<string, number>>;
  readonly retriesByVersion: MetricsAnswer<Record<string, number>>;
  readonly dlqSentByReason: MetricsAnswer<Record<string, number>>;
  readonly dlqSentByVersion: MetricsAnswer<Record<string, number>>;
  readonly lockContention: MetricsAnswer<Record<string, number>>;
  readonly fenced: MetricsAnswer<Record<string, number>>;
  readonly alarms: MetricsAnswer<AlarmState[]>;
  readonly notifications: MetricsAnswer<AlarmNotifications>;
  readonly control: Maybe<ControlTableScan>;
  readonly deadLetters: Maybe<DlqListing>;
  readonly cache: Maybe<ReconcileReport>;
}

/** Samples the queues twice, reads metrics, scans the control table, samples the DLQ and the cache. */
export async function gatherEvidence(context: OpsContext, options: DoctorOptions = {}): Promise<Evidence> {
  const o = withDefaults(DOCTOR_DEFAULTS, options) as typeof DOCTOR_DEFAULTS;
  const { sqs, documents } = context.clients;
  const { outputs } = context.stack;
  const reader = metricsReader(context);
  const [jobsBefore, dlqBefore] = await Promise.all([queueCounts(sqs, outputs.JobsQueueUrl), queueCounts(sqs, outputs.JobsDeadLetterQueueUrl)]);
  await sleep(o.sampleSeconds * 1000);
  const w = o.windowMinutes;
  const sqsMetric = (name: string) => reader.sum('AWS/SQS', name, [{ Name: 'QueueName', Value: queueName(outputs.JobsQueueUrl) }], w);
  const nowMs = Date.now();
  const [jobs, dlq, invalidatorFailures, received, deleted, processedByVersion, duplicatesByVersion, retriesByReason, retriesByVersion,
    dlqSentByReason, dlqSentByVersion, lockContention, fenced, alarms, notifications, control, deadLetters, cache, invalidatorIteratorAgeMs] = await Promise.all([
    // Never peek the jobs queue: a receive counts against maxReceiveCount and hides live jobs.
    queueStatus(context, reader, outputs.JobsQueueUrl, false, nowMs),
    queueCounts(sqs, outputs.JobsDeadLetterQueueUrl),
    queueCounts(sqs, outputs.InvalidatorFailureQueueUrl),
    sqsMetric('NumberOfMessagesReceived'),
    sqsMetric('NumberOfMessagesDeleted'),
    reader.sumBy('Ballast', METRICS.processed, 'workerVersion', w),
    reader.sumBy('Ballast', METRICS.duplicates, 'workerVersion', w),
    reader.sumBy('Ballast', METRICS.retries, 'reason', w),
    reader.sumBy('Ballast', METRICS.retries, 'workerVersion', w),
    reader.sumBy('Ballast', METRICS.sentToDlq, 'reason', w),
    reader.sumBy('Ballast', METRICS.sentToDlq, 'workerVersion', w),
    reader.sumBy('Ballast', METRICS.lockContention, 'workerVersion', w),
    reader.sumBy('Ballast', METRICS.fenced, 'workerVersion', w),
    reader.alarms(context.stack.alarmPrefix),
    reader.alarmNotifications(context.stack.alarmPrefix, w),
    attempt(() => scanControlTable(documents, outputs.ControlTableName, nowMs, { graceMs: o.lockGraceMs })),
    attempt(() => listDeadLetters({ sqs, deadLetterQueueUrl: outputs.JobsDeadLetterQueueUrl, defaultSourceQueueUrl: outputs.JobsQueueUrl }, {}, o.dlqSample)),
    o.cachedEntities.length === 0
      ? Promise.resolve({ ok: false as const, why: 'no registered workload caches an entity' })
      : attempt(async () => checkCache({
        ...await cacheTarget(context), documents, stateTableName: outputs.StateTableName, entities: o.cachedEntities, sample: o.cacheSample,
      })),
    outputs.InvalidatorFunctionName
      ? reader.maximum('AWS/Lambda', 'IteratorAge', [{ Name: 'FunctionName', Value: outputs.InvalidatorFunctionName }], w)
      : Promise.resolve({ ok: false as const, why: 'the stack has no InvalidatorFunctionName output' }),
  ]);
  return {
    options: o, jobsBefore, jobs, dlqBefore, dlq, invalidatorFailures, received, deleted, processedByVersion, duplicatesByVersion,
    retriesByReason, retriesByVersion, dlqSentByReason, dlqSentByVersion, lockContention, fenced, alarms, notifications, control, deadLetters, cache,
    invalidatorIteratorAgeMs,
  };
}

async function attempt<T>(read: () => Promise<T>): Promise<Maybe<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    return { ok: false, why: `${(error as Error).name}: ${(error as Error).message}` };
  }
}
