import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Context, SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { CACHE_METRICS, type EntityCache, type ReconcileReport } from '../../shared/cache/index.ts';
import { countByReason, MetricUnit, type Observability } from '../../shared/observability/index.ts';
import { withDefaults } from '../../shared/options/index.ts';
import {
  InvalidInvocationRecordError, parseStreamBatchInfo, readShardRange, type ReadShardRangeOptions, type StreamBatchInfo,
} from '../../shared/streams/index.ts';
import { createInvalidator } from '../cache-invalidator/invalidator.ts';

export interface InvalidationRepairDependencies {
  /** Reads the failed batches back (GetShardIterator, GetRecords). */
  readonly streams: DynamoDBStreamsClient;
  /** `invalidate` applies the records again (through the invalidator); `reconcile` is the full repair. */
  readonly cache: Pick<EntityCache, 'invalidate' | 'reconcile' | 'entities'>;
  readonly observability: Observability;
  /** @default - the defaults of `readShardRange` (25 GetRecords pages per batch) */
  readonly range?: ReadShardRangeOptions;
  /**
   * A message is only started while the invocation has at least this long left (reading the
   * batch back and applying it, or a reconcile, must fit); the rest are reported for redelivery
   * rather than cut off by the timeout, which would return the whole batch. Without a Lambda
   * context every message is started.
   * @default 10_000
   */
  readonly minRemainingMs?: number;
}

const defaults = { minRemainingMs: 10_000 };

/** Reason on `CacheInvalidationRepairFallbacks` for a message that is not an invocation record. */
export const UNREADABLE_MESSAGE = 'unreadable-message';

/**
 * The consumer of the cache invalidator's on-failure queue. Each message is Lambda's invocation
 * record of a stream batch the invalidator gave up on; the repair reads that batch back from the
 * stream and applies it with the invalidator's own code (same planning, same idempotent Lua), so
 * the commits' stale entries are tombstoned now rather than when their TTL runs out.
 *
 * - Records gone from the stream (trimmed, shard or stream gone, range refused) or a message that
 *   is not an invocation record: nobody can tell which items changed, so the whole cache is
 *   reconciled with the table (`reconcile({ repair: true, sample: Infinity })`, once per
 *   invocation however many messages need it), counted as `CacheInvalidationRepairFallbacks` by
 *   reason and logged.
 * - Anything that fails (Redis still down, stream throttled): the message is reported in
 *   `batchItemFailures`, so SQS delivers it again; past the queue's maxReceiveCount it moves to
 *   the repair's DLQ (alarmed). Given the Lambda context, the invalidator first waits out a short
 *   Redis outage within the invocation, as it does on the stream.
 *
 * @example
 * import { createInvalidationRepair } from './repair.ts';
 * export const handler = createInvalidationRepair({ streams, cache, observability });
 */
export function createInvalidationRepair(
  deps: InvalidationRepairDependencies,
): (event: SQSEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SQSBatchResponse> {
  const { minRemainingMs } = withDefaults(defaults, deps);
  if (!(minRemainingMs >= 0) || !Number.isFinite(minRemainingMs)) {
    throw new RangeError(`createInvalidationRepair: minRemainingMs must be a finite number >= 0, got ${minRemainingMs}`);
  }
  const { logger, metrics } = deps.observability;
  const invalidate = createInvalidator({ cache: deps.cache, observability: deps.observability });

  /** True when the batch is repaired; false when it must be delivered again. */
  async function repairMessage(
    message: SQSRecord, repairEverything: () => Promise<ReconcileReport>, context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
  ): Promise<boolean> {
    const fallBack = async (reason: string, where: Record<string, unknown>) => {
      const report = await repairEverything();
      countByReason(deps.observability, CACHE_METRICS.invalidationRepairFallbacks, reason);
      logger.warn('failed stream batch repaired by a full cache reconcile', {
        ...where, reason, sampled: report.sampled, mismatches: report.mismatches, repaired: report.repaired,
      });
      return true;
    };
    let batch: StreamBatchInfo;
    try {
      batch = parseStreamBatchInfo(message.body);
    } catch (error) {
      if (!(error instanceof InvalidInvocationRecordError)) throw error;
      logger.error('failure-queue message is not a stream invocation record', { messageId: message.messageId, body: message.body.slice(0, 1_000), error });
      return fallBack(UNREADABLE_MESSAGE, { messageId: message.messageId });
    }
    const where = describe(message, batch);
    const range = await readShardRange(deps.streams, batch, deps.range);
    if (range.kind === 'unavailable') return fallBack(range.reason, { ...where, detail: range.detail });
    const { batchItemFailures } = await invalidate({ Records: [...range.records] }, context);
    if (batchItemFailures.length > 0) {
      logger.warn('failed stream batch still cannot be applied; the message will be delivered again', {
        ...where, records: range.records.length, unapplied: batchItemFailures.length,
      });
      return false;
    }
    metrics.addMetric(CACHE_METRICS.invalidationsRepaired, MetricUnit.Count, range.records.length);
    logger.info('failed stream batch applied again', { ...where, records: range.records.length });
    return true;
  }

  return async function invalidationRepair(event, context) {
    const failures: SQSBatchItemFailure[] = [];
    // Every message of this invocation was queued before it started, so one full repair, which
    // compares with the table as it is now, covers all the ones that need it.
    let fullRepair: Promise<ReconcileReport> | undefined;
    const repairEverything = () => (fullRepair ??= deps.cache.reconcile({ repair: true, sample: Infinity }));
    try {
      for (const [index, message] of event.Records.entries()) {
        if (context && context.getRemainingTimeInMillis() < minRemainingMs) {
          const rest = event.Records.slice(index);
          logger.warn('invocation almost over; reporting the messages not started for redelivery', { reported: rest.length, minRemainingMs });
          failures.push(...rest.map((skipped) => ({ itemIdentifier: skipped.messageId })));
          break;
        }
        try {
          if (!(await repairMessage(message, repairEverything, context))) failures.push({ itemIdentifier: message.messageId });
        } catch (error) {
          logger.warn('invalidation repair failed; the message will be delivered again', { messageId: message.messageId, error: error as Error });
          failures.push({ itemIdentifier: message.messageId });
        }
      }
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
    return { batchItemFailures: failures };
  };
}

function describe(message: SQSRecord, batch: StreamBatchInfo) {
  return {
    messageId: message.messageId,
    receiveCount: message.attributes.ApproximateReceiveCount,
    streamArn: batch.streamArn,
    shardId: batch.shardId,
    startSequenceNumber: batch.startSequenceNumber,
    endSequenceNumber: batch.endSequenceNumber,
    batchSize: batch.batchSize,
  };
}
