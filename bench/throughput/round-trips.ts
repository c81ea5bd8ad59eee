/** One SDK command, from its send to its answer (`performance.now()`): signing and the SDK's own retries included. */
export interface RequestSpan {
  readonly sentMs: number;
  readonly answeredMs: number;
}

/**
 * The round trips an invocation made in series: the longest chain of requests each sent after the
 * one before it was answered. On AWS, where the service does not share the function's cores, it is
 * what sets an invocation's duration (and its bill) when the handler mostly waits on DynamoDB:
 * requests sent side by side cost one round trip together.
 */
export function roundTripsInSeries(spans: readonly RequestSpan[]): number {
  const sorted = [...spans].sort((a, b) => a.sentMs - b.sentMs);
  const depth: number[] = [];
  for (const [i, span] of sorted.entries()) {
    let before = 0;
    for (let j = 0; j < i; j += 1) {
      if ((sorted[j] as RequestSpan).answeredMs <= span.sentMs) before = Math.max(before, depth[j] as number);
    }
    depth.push(before + 1);
  }
  return Math.max(0, ...depth);
}
