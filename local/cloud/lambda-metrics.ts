import type { EventCountListener } from '../lambda/event-counts.ts';
import type { InvocationReport } from '../lambda/function-runtime.ts';
import type { MetricsCollector } from './metrics.ts';
import type { LocalFunction, LocalMapping } from './provision.ts';

/**
 * Lambda's own metrics of one invocation, in `AWS/Lambda` under the dimension sets Lambda
 * publishes: the function, and for each alias `Resource = <function>:<alias>`; `Invocations`,
 * `Errors` and `Duration` also with `ExecutedVersion` (what the rollback alarms watch).
 *
 * `Throttles` is always 0: the local runtime never refuses an invocation, it waits for a sandbox.
 * `ConcurrentExecutions` (read as Maximum) is `concurrentExecutions`, the function's busy
 * sandboxes at the invocation, the same for the function and its alias. Not recorded:
 * `ProvisionedConcurrencySpilloverInvocations`, as there is no provisioned concurrency locally.
 */
export function recordLambdaMetrics(
  metrics: MetricsCollector, fn: LocalFunction, version: string, report: InvocationReport, concurrentExecutions: number,
): void {
  const nowMs = metrics.clock();
  const record = (dimensions: Record<string, string>, name: string, value: number) => metrics.series.record({ namespace: 'AWS/Lambda', name, dimensions }, value, nowMs);
  const sets: Record<string, string>[] = [{ FunctionName: fn.name }, ...fn.aliases.map((alias) => ({ FunctionName: fn.name, Resource: `${fn.name}:${alias}` }))];
  for (const dimensions of [...sets, ...sets.slice(1).map((set) => ({ ...set, ExecutedVersion: version }))]) {
    record(dimensions, 'Invocations', 1);
    record(dimensions, 'Errors', report.error ? 1 : 0);
    record(dimensions, 'Duration', report.durationMs);
  }
  for (const dimensions of sets) {
    record(dimensions, 'Throttles', 0);
    record(dimensions, 'ConcurrentExecutions', concurrentExecutions);
  }
}

/**
 * What records an event source mapping's event counts in `AWS/Lambda` under its
 * `EventSourceMappingUUID`, or undefined when its `MetricsConfig` does not ask for `EventCount`
 * (Lambda then publishes none). Every poll also records `FilteredOutEventCount` 0 when the
 * mapping has no `FilterCriteria`, as nothing can be filtered out; with criteria (which the local
 * mappings do not apply) it has no datapoints.
 */
export function eventCountRecorder(metrics: MetricsCollector, mapping: LocalMapping): EventCountListener | undefined {
  const requested = (mapping.properties.MetricsConfig as { Metrics?: unknown } | undefined)?.Metrics;
  if (!Array.isArray(requested) || !requested.includes('EventCount')) return undefined;
  const filtered = mapping.properties.FilterCriteria !== undefined;
  const record = (name: string, value: number) =>
    metrics.series.record({ namespace: 'AWS/Lambda', name, dimensions: { EventSourceMappingUUID: mapping.uuid } }, value, metrics.clock());
  return (metric, count) => {
    record(metric, count);
    if (metric === 'PolledEventCount' && !filtered) record('FilteredOutEventCount', 0);
  };
}
