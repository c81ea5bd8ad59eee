import type { LocalCloud } from '../cloud/index.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The second worker version's `WORKER_VERSION` (the first's is the chaos stack's, `chaos`). */
export const ROLLOUT_WORKER_VERSION = 'chaos-v2';

export interface WorkerRolloutOptions {
  readonly cloud: LocalCloud;
  /** The worker function's name. */
  readonly functionName: string;
  /** How long the send phase lasts: the steps are fractions of it. */
  readonly sendMs: number;
  readonly injected: Record<string, number>;
  readonly log: (line: string) => void;
}

export interface WorkerRollout {
  /** The steps during the send phase: resolves after the last one. */
  readonly during: Promise<void>;
  /** Points the alias at version 2 with no routing left (the deployment succeeded): called when the drain starts. */
  promote(): void;
  /** What each version did, by `WORKER_VERSION`. */
  report(): RolloutReport;
}

export interface RolloutReport {
  /** Each version's lock lease, ms. */
  readonly leaseMs: Readonly<Record<string, number>>;
  /** The worker's invocations each version ran (Lambda's `Invocations` by `ExecutedVersion`). */
  readonly invocations: Readonly<Record<string, number>>;
  /** Records each version committed (its `JobsProcessed`). */
  readonly processed: Readonly<Record<string, number>>;
}

/**
 * A worker rollout in the middle of the faults, as a CodeDeploy canary runs one: version 2 of the
 * worker, the same code with its own `WORKER_VERSION` and a lock lease a third longer (a
 * configuration change shipped with the release), takes a quarter of the invocations at 15 % of
 * the send phase, is rolled back at 40 % while its invocations are still in flight (they finish on
 * version 2), takes half from 60 % on, through the convoys, and is promoted when the drain starts.
 * So claims and locks taken by one version are met, waited for, taken over after their lease, and
 * given back by the other, each with its own lease, while every other fault goes on.
 */
export function workerRollout(options: WorkerRolloutOptions): WorkerRollout {
  const { cloud, functionName, sendMs, injected, log } = options;
  const fn = cloud.resources.functions.find((candidate) => candidate.name === functionName);
  const routing = cloud.routing.get(functionName);
  if (!fn || !routing) throw new Error(`no function ${functionName} with an alias in the chaos stack`);
  const v1 = { version: routing.primary.version, workerVersion: fn.environment.WORKER_VERSION ?? 'chaos', leaseMs: Number(fn.environment.LOCK_LEASE_MS) };
  if (!(v1.leaseMs > 0)) throw new Error(`the worker's LOCK_LEASE_MS is '${fn.environment.LOCK_LEASE_MS}', not a lease`);
  const v2LeaseMs = Math.round((v1.leaseMs * 4) / 3);
  const v2 = cloud.publishVersion(functionName, { environment: { WORKER_VERSION: ROLLOUT_WORKER_VERSION, LOCK_LEASE_MS: String(v2LeaseMs) } });
  const count = (step: string) => void (injected[`rollout.${step}`] = (injected[`rollout.${step}`] ?? 0) + 1);

  const startedMs = Date.now();
  const at = (fraction: number) => sleep(Math.max(0, startedMs + fraction * sendMs - Date.now()));
  const during = (async () => {
    await at(0.15);
    routing.route(v2, 0.25);
    count('canary');
    log(`chaos: worker version ${v2.version} (${ROLLOUT_WORKER_VERSION}, lease ${v2LeaseMs} ms) takes 25 % of the invocations`);
    await at(0.4);
    routing.rollBack();
    count('rollback');
    log(`chaos: worker version ${v2.version} rolled back, its invocations in flight`);
    await at(0.6);
    routing.route(v2, 0.5);
    count('canary');
    log(`chaos: worker version ${v2.version} takes 50 % of the invocations`);
  })();
  return {
    during,
    promote: () => {
      routing.promote();
      count('promote');
      log(`chaos: worker version ${v2.version} promoted`);
    },
    report: () => {
      const workerVersionOf = new Map([[v1.version, v1.workerVersion], [v2.version, ROLLOUT_WORKER_VERSION]]);
      const invocations: Record<string, number> = {};
      for (const identity of cloud.metrics.series.identities('AWS/Lambda', 'Invocations')) {
        const { FunctionName, ExecutedVersion } = identity.dimensions;
        const workerVersion = FunctionName === functionName && ExecutedVersion ? workerVersionOf.get(ExecutedVersion) : undefined;
        if (workerVersion) invocations[workerVersion] = (invocations[workerVersion] ?? 0) + cloud.metrics.series.values(identity).reduce((a, b) => a + b, 0);
      }
      return {
        leaseMs: { [v1.workerVersion]: v1.leaseMs, [ROLLOUT_WORKER_VERSION]: v2LeaseMs },
        invocations,
        processed: cloud.metrics.breakdown('JobsProcessed', 'workerVersion'),
      };
    },
  };
}
