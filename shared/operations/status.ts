import { DescribeServerlessCachesCommand } from '@aws-sdk/client-elasticache';
import type { OpsContext } from './context.ts';
import { MetricsReader, type AlarmNotifications, type AlarmState, type MetricsAnswer } from './metrics.ts';
import { peekOldestAgeSeconds, queueCounts, queueName, type QueueCounts } from './queues.ts';

/** Where an age-of-oldest-message figure came from. */
export type AgeSource = 'cloudwatch' | 'peek' | 'empty';

export interface QueueStatus extends QueueCounts {
  readonly url: string;
  readonly oldestAgeSeconds: number | undefined;
  readonly oldestAgeSource: AgeSource;
}

export interface CacheStatus {
  readonly url: string | undefined;
  /** From ElastiCache DescribeServerlessCaches where there is such an API (AWS). */
  readonly status: string;
  readonly endpoint: string | undefined;
}

export interface StackStatus {
  readonly stackName: string;
  readonly env: string;
  readonly jobs: QueueStatus;
  readonly deadLetters: QueueStatus;
  readonly invalidatorFailures: QueueCounts;
  readonly alarms: MetricsAnswer<AlarmState[]>;
  /** The alarms' notifications in the window: sent, and failed (a topic that refused them). */
  readonly notifications: MetricsAnswer<AlarmNotifications>;
  /** Jobs processed per worker version over the window (several during a rollout). */
  readonly workerVersions: MetricsAnswer<Record<string, number>>;
  readonly cache: CacheStatus;
  readonly windowMinutes: number;
}

export function metricsReader(context: OpsContext): MetricsReader {
  return new MetricsReader(context.hasCloudWatch ? context.clients.cloudwatch : undefined,
    'the local cloud serves no CloudWatch endpoint (AWS_ENDPOINT_URL_CLOUDWATCH is not set)');
}

/**
 * A queue's counters and the age of its oldest message: CloudWatch's ApproximateAgeOfOldestMessage
 * where it has data, else a peek at `SentTimestamp`s (which counts as a receive, so it is done only
 * when the queue has visible messages and `allowPeek`).
 */
export async function queueStatus(context: OpsContext, reader: MetricsReader, url: string, allowPeek: boolean, nowMs = Date.now()): Promise<QueueStatus> {
  const counts = await queueCounts(context.clients.sqs, url);
  if (counts.visible === 0) return { url, ...counts, oldestAgeSeconds: 0, oldestAgeSource: 'empty' };
  const metric = await reader.maximum('AWS/SQS', 'ApproximateAgeOfOldestMessage', [{ Name: 'QueueName', Value: queueName(url) }], 5);
  if (metric.ok && metric.value !== undefined) return { url, ...counts, oldestAgeSeconds: metric.value, oldestAgeSource: 'cloudwatch' };
  const peeked = allowPeek ? await peekOldestAgeSeconds(context.clients.sqs, url, nowMs) : undefined;
  return { url, ...counts, oldestAgeSeconds: peeked, oldestAgeSource: 'peek' };
}

export async function cacheStatus(context: OpsContext): Promise<CacheStatus> {
  const url = context.cacheUrl;
  if (!context.hasElastiCache) return { url, status: 'not emulated here (redis-server)', endpoint: url };
  try {
    const host = url ? new URL(url).hostname : '';
    const out = await context.clients.elasticache.send(new DescribeServerlessCachesCommand({}));
    const cache = (out.ServerlessCaches ?? []).find((c) => c.Endpoint?.Address === host) ??
      (out.ServerlessCaches ?? []).find((c) => c.ServerlessCacheName?.startsWith(context.stack.stackName));
    if (!cache) return { url, status: 'not found', endpoint: url };
    return { url, status: cache.Status ?? 'unknown', endpoint: cache.Endpoint ? `${cache.Endpoint.Address}:${cache.Endpoint.Port}` : url };
  } catch (error) {
    return { url, status: `unknown (${(error as Error).name}: ${(error as Error).message})`, endpoint: url };
  }
}

/** Everything `ballast status` shows. */
export async function gatherStatus(context: OpsContext, windowMinutes = 15): Promise<StackStatus> {
  const reader = metricsReader(context);
  const { outputs } = context.stack;
  const [jobs, deadLetters, invalidatorFailures, alarms, notifications, workerVersions, cache] = await Promise.all([
    // Never peek the jobs queue: a receive counts against maxReceiveCount and hides live jobs.
    queueStatus(context, reader, outputs.JobsQueueUrl, false),
    queueStatus(context, reader, outputs.JobsDeadLetterQueueUrl, true),
    queueCounts(context.clients.sqs, outputs.InvalidatorFailureQueueUrl),
    reader.alarms(context.stack.alarmPrefix),
    reader.alarmNotifications(context.stack.alarmPrefix, windowMinutes),
    reader.sumBy('Ballast', 'JobsProcessed', 'workerVersion', windowMinutes),
    cacheStatus(context),
  ]);
  return { stackName: context.stack.stackName, env: context.stack.env, jobs, deadLetters, invalidatorFailures, alarms, notifications, workerVersions, cache, windowMinutes };
}
