/** What a sandbox reports after each invocation (or right before it crashes). */
export interface InvocationReport {
  readonly requests: Record<string, number>;
  readonly cpuMicros: number;
  /** DynamoDB round trips the invocation made in series (`roundTripsInSeries`). */
  readonly roundTripsInSeries: number;
  /** Item writes the invocation's requests asked for (`itemWritesOf`), and those in requests DynamoDB refused or cancelled. */
  readonly itemWrites: number;
  readonly refusedItemWrites: number;
  readonly crashed: boolean;
  /** The invocation's duration as Lambda bills it: milliseconds, rounded up. */
  readonly billedMs: number;
  /** Capacity units the requests cost (`capacityOf`); a cancelled transaction's apart, as `cancelledWrite`. */
  readonly capacityUnits: { readonly read: number; readonly write: number; readonly cancelledWrite: number };
}

/** The BroadcastChannel sandboxes report on (worker threads of the bench's own process). */
export const REPORT_CHANNEL = 'ballast-bench-throughput';
