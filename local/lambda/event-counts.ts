/**
 * The counts Lambda publishes for an event source mapping whose `MetricsConfig` asks for
 * `EventCount` (namespace `AWS/Lambda`, dimension `EventSourceMappingUUID`, read as a Sum), as the
 * local mappings report them:
 * - `PolledEventCount`: events one read returned; an empty poll reports 0.
 * - `InvokedEventCount`: events the function was invoked with, again on every retry.
 * - `FailedInvokeEventCount`: events of an invocation that failed (error, timeout, abandoned at
 *   stop), and those a returning invocation reported in `batchItemFailures` (for a stream, the
 *   reported record and those after it, which are retried with it).
 * - `DeletedEventCount` (queues): events deleted from the queue after processing.
 * - `DroppedEventCount` (streams): events skipped once their retries or age ran out, when there
 *   is no on-failure destination.
 * - `OnFailureDestinationDeliveredEventCount` (streams): events skipped that way and reported to
 *   the on-failure destination.
 *
 * `FilteredOutEventCount` is not among them: the local mappings apply no filter criteria.
 */
export type EventCountMetric =
  | 'PolledEventCount' | 'InvokedEventCount' | 'FailedInvokeEventCount' | 'DeletedEventCount'
  | 'DroppedEventCount' | 'OnFailureDestinationDeliveredEventCount';

/** Receives each count as it happens. */
export type EventCountListener = (metric: EventCountMetric, count: number) => void;

/**
 * Wraps an event source's `onEventCount` so it never throws: a failing metrics callback is
 * reported, and must neither kill a poller nor leave a batch unsettled.
 */
export function eventCounter(listener: EventCountListener | undefined, reportError: (error: unknown) => void): EventCountListener {
  return (metric, count) => {
    try {
      listener?.(metric, count);
    } catch (error) {
      reportError(error);
    }
  };
}
