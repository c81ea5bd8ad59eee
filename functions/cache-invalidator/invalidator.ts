import type { Context, DynamoDBBatchItemFailure, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { CACHE_METRICS, CacheUnavailableError, type EntityCache, type EntityChange } from '../../shared/cache/index.ts';
import { countByReason, type Observability } from '../../shared/observability/index.ts';
import { trace, type Link } from '@opentelemetry/api';
import { annotate, ATTRIBUTES, contextOfTraceparent, inSpan, SPANS } from '../../shared/tracing/index.ts';
import { planRecord } from './stream-record.ts';

export interface InvalidatorDependencies {
  /** Applies the changes of its `entities`; the rest of the table is ignored. */
  readonly cache: Pick<EntityCache, 'invalidate' | 'entities'>;
  readonly observability: Observability;
  /**
   * While Redis is unreachable, one change is tried again (backing off from 100 ms to this) until
   * the invocation has only `marginMs` left. The stream's own retries come back within
   * milliseconds and would be spent long before a short outage ends.
   * @default { maxDelayMs: 2_000, marginMs: 3_000 }
   */
  readonly outageWait?: { readonly maxDelayMs?: number; readonly marginMs?: number };
}

/** Reason on `CacheInvalidationsSkipped` for records that cannot be read as a cached item's change. */
export const MALFORMED_RECORD = 'malformed-record';

/**
 * The stream handler of the state table: writes a tombstone (and drops older entries) for every
 * changed item of a cached entity, and reports what it could not apply as `batchItemFailures`.
 *
 * Failure handling, record by record in stream order:
 * - Redis unreachable: the change is tried again, backing off, until the invocation is about to
 *   time out (see `outageWait`), so a short outage costs one slow invocation, not the stream's
 *   whole retry budget. Still unreachable then (or any other error applying a change): that
 *   record and every later one in the batch are reported. The mapping retries from the first
 *   reported sequence number (it would re-deliver the later ones anyway), then bisects and finally
 *   sends the batch's metadata to its on-failure destination, which the invalidation repair drains. Replays are harmless: invalidation is idempotent and order-independent.
 * - A malformed record of a cached entity (no usable version): logged as an error and counted as
 *   `CacheInvalidationsSkipped{reason=malformed-record}` (alarm on it), but NOT reported: the same
 *   bytes can never succeed, and reporting would stall every later invalidation of the shard until
 *   the retries run out. The entry it would have dropped still expires with its TTL and
 *   `reconcile` finds it.
 * - Items of entities nobody caches, and ids that are never cached, are skipped silently.
 *
 * @example
 * import { createInvalidator } from './invalidator.ts';
 * export const handler = createInvalidator({ cache, observability });
 */
export function createInvalidator(deps: InvalidatorDependencies): (event: DynamoDBStreamEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<DynamoDBBatchResponse> {
  const { logger, metrics } = deps.observability;
  const maxDelayMs = deps.outageWait?.maxDelayMs ?? 2_000;
  const marginMs = deps.outageWait?.marginMs ?? 3_000;

  /** Applies one change, waiting out an outage while the invocation has time; without a context, tries once. */
  const cached = new Set(deps.cache.entities.keys());
  const apply = async (change: EntityChange, deadlineMs: number) => {
    for (let delayMs = 100; ; delayMs = Math.min(maxDelayMs, delayMs * 2)) {
      try {
        return await deps.cache.invalidate(change);
      } catch (error) {
        if (!(error instanceof CacheUnavailableError) || Date.now() + delayMs > deadlineMs) throw error;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  };

  return async function cacheInvalidator(event, context) {
    const deadlineMs = context ? Date.now() + context.getRemainingTimeInMillis() - marginMs : 0;
    const failures: DynamoDBBatchItemFailure[] = [];
    try {
      for (const [index, record] of event.Records.entries()) {
        const plan = planRecord(record, cached);
        if (plan.kind === 'ignore') continue;
        if (plan.kind === 'malformed') {
          logger.error('stream record skipped: it cannot be read as a cached item\'s change', { ...describe(record), problem: plan.problem });
          countByReason(deps.observability, CACHE_METRICS.invalidationsSkipped, MALFORMED_RECORD);
          continue;
        }
        try {
          await traceRecord(record, plan.change, plan.writeTrace, () => apply(plan.change, deadlineMs));
        } catch (error) {
          const unapplied = event.Records.slice(index);
          logger.warn('invalidation failed; reporting the rest of the batch for retry', {
            ...describe(record), entity: plan.change.entity, id: plan.change.id, version: plan.change.version, reported: unapplied.length, error: error as Error,
          });
          failures.push(...unapplied.map((failed) => ({ itemIdentifier: failed.dynamodb?.SequenceNumber ?? '' })));
          break;
        }
      }
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
    return { batchItemFailures: failures };
  };
}

/**
 * The stream record's span joins the trace of the job that wrote the item (the image's
 * `traceparent`), linked to this invocation's span: "why was this stale for 9 s" reads off the
 * job's own trace, commit to tombstone.
 */
function traceRecord<T>(record: DynamoDBRecord, change: EntityChange, writeTrace: string | undefined, body: () => Promise<T>): Promise<T> {
  const invocation = trace.getActiveSpan()?.spanContext();
  const links: Link[] = invocation && writeTrace ? [{ context: invocation }] : [];
  return inSpan(SPANS.streamRecord, { parent: writeTrace ? contextOfTraceparent(writeTrace) : undefined, links }, async (span) => {
    annotate(span, () => ({
      [ATTRIBUTES.streamEventName]: String(record.eventName), [ATTRIBUTES.entity]: change.entity, [ATTRIBUTES.entityId]: change.id,
      [ATTRIBUTES.version]: change.version, 'aws.dynamodb.stream.sequence_number': record.dynamodb?.SequenceNumber ?? '',
      ...(change.committedAtMs === undefined ? {} : { [ATTRIBUTES.invalidationLagMs]: Math.max(0, Date.now() - change.committedAtMs) }),
    }));
    return body();
  });
}

function describe(record: DynamoDBRecord) {
  return { eventID: record.eventID, eventName: record.eventName, sequenceNumber: record.dynamodb?.SequenceNumber };
}
