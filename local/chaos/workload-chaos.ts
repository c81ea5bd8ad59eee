import type { Reason } from '../../shared/errors/index.ts';
import type { DeadLetter } from '../../shared/operations/dlq-messages.ts';
import type { ExternalApi } from '../external-api/index.ts';

/** One intent (one idempotency key), however many messages carry it. */
export interface ChaosJob {
  /** What the job is, in its workload's words (e.g. `make`): for the report and the workload's checks. */
  readonly kind: string;
  readonly idempotencyKey: string;
  /** The envelope's `resourceId`. */
  readonly resourceId: string;
  readonly body: string;
  /**
   * Dead-letter reasons the job's own content and order can earn it (a widget past its limit, a
   * scrap delivered before its widget). Any other reason on a valid job is a violation
   * unless the fault schedule exhausted its receives, which a replay must then bring to exact.
   */
  readonly allowedReasons: readonly Reason[];
}

/** See {@link ChaosTraffic.convoy}. */
export interface ChaosConvoy {
  /** The setting naming the API fake its jobs call, e.g. `PAYMENTS_API_URL`. */
  readonly api: string;
  /** The resource they all lock, as the fake's path names it. */
  readonly resourceId: string;
  /** How long the fake takes over every call for it: longer than the lease, shorter than the worker's timeout. */
  readonly slowMs: number;
  readonly jobs: readonly ChaosJob[];
}

/** A fuzzed body and the fate the worker owes it (see the account example's `poisonMessages`). */
export interface ChaosPoison {
  readonly kind: string;
  readonly variant: string;
  readonly body: string;
  /** Valid bodies are jobs like any other; invalid ones must reach the DLQ with `expectedReason`. */
  readonly valid: boolean;
  readonly expectedReason?: Reason;
  readonly idempotencyKey?: string;
  /** For a valid body: the job kind it counts as. */
  readonly jobKind?: string;
}

/** What a workload's chaos traffic is given. */
export interface ChaosTrafficRequest {
  readonly seed: number;
  readonly random: () => number;
  /** Messages in the run's main phase (all workloads, copies and poison included): what a convoy scales with. */
  readonly jobs: number;
  /** Builds a job of the run (its key, job id, trace id and time derived from the run's seed) and records it. */
  job(kind: string, type: string, resourceId: string, payload: Record<string, unknown>, allowedReasons: readonly Reason[]): ChaosJob;
}

/** A workload's share of the chaos run's traffic. */
export interface ChaosTraffic {
  /** Sent and applied before the main phase: the items the rest of its jobs act on. */
  readonly openings: readonly ChaosJob[];
  /** The next main-phase job (new intent); called once for each slot the run gives the workload. */
  next(): ChaosJob;
  /** Read API paths the readers poll, hottest first (the readers favour the front). */
  readonly reads: readonly string[];
  /**
   * A convoy on one resource: external jobs whose API answers every call for that resource slowly
   * (past the lock lease, so each holder heartbeats it), sent together once the main phase's
   * backlog is down. The jobs behind its lock meet it receive after receive; waiting is not
   * failing, so the run expects them requeued rather than dead-lettered for the lock. Called once, by runs that want
   * convoys (the chaos run; not the end-to-end bench or the rehearsal), after the main phase's
   * jobs. @default - none
   */
  convoy?(): ChaosConvoy;
  /** Fuzzed poison on its own messages (the run interleaves it). @default - none */
  poison?(count: number): readonly ChaosPoison[];
  /** What the report says the traffic ran over, e.g. `{ accounts: 200 }`. */
  readonly sizes: Readonly<Record<string, number>>;
}

/** What a workload's checks read back after quiescence. */
export interface ChaosCheck {
  /** Completed idempotency records by key. */
  readonly completed: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** Every item of the state table. */
  readonly state: readonly Readonly<Record<string, unknown>>[];
  readonly lettersByKey: ReadonlyMap<string, readonly DeadLetter[]>;
  /** Every valid intent of the run. */
  readonly jobs: ReadonlyMap<string, ChaosJob>;
  /** The workloads' API fakes, by setting. */
  readonly apis: ReadonlyMap<string, ExternalApi>;
  /** Counts one violation of one of the workload's `invariants`. */
  violate(name: string, example: string): void;
}

/**
 * What a workload adds to the chaos run (`local.chaos` of `workloads/<name>/local/index.ts`): its
 * traffic and the promises only it can check. The run's own invariants (nothing lost, poison
 * filed, no stale cache entry, no external effect twice, no orphan claim...) cover it too.
 */
export interface WorkloadChaos {
  /** Its share of the main phase, relative to the other workloads'. @default 1 */
  readonly weight?: number;
  traffic(request: ChaosTrafficRequest): ChaosTraffic;
  /** Its invariants: name → what one violation is. */
  readonly invariants: Readonly<Record<string, string>>;
  check(check: ChaosCheck): void;
  /**
   * Dead-letter reasons an API fake's chaos rightly earns a job whose key the fake answered with a
   * non-object: reason → the setting of that fake.
   * @default {}
   */
  readonly rejections?: Readonly<Record<string, string>>;
}
