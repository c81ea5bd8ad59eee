import { GetMetricDataCommand, type CloudWatchClient, type MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import { GetDeploymentCommand, PutLifecycleEventHookExecutionStatusCommand, type CodeDeployClient } from '@aws-sdk/client-codedeploy';
import { METRICS } from '../../shared/observability/index.ts';

/** What CodeDeploy sends a lifecycle hook. */
export interface CodeDeployHookEvent {
  readonly DeploymentId: string;
  readonly LifecycleEventHookExecutionId: string;
}

/** The part of the Lambda context the hook budgets its wait with. */
export interface HookContext {
  getRemainingTimeInMillis(): number;
}

/** What the hook checks; read from the environment by {@link postTrafficCheckConfigFromEnv}. */
export interface PostTrafficCheckConfig {
  /** The deployed worker's version: the `workerVersion` dimension of its metrics (`TARGET_WORKER_VERSION`). */
  readonly workerVersion: string;
  /** The worker's `service` dimension (`TARGET_SERVICE_NAME`). @default 'ballast-worker' */
  readonly serviceName: string;
  /** Records (processed + duplicates suppressed) the new version must have handled (`MIN_RECORDS`). */
  readonly minRecords: number;
  /** How long to keep re-reading for late EMF datapoints before failing (`SETTLE_SECONDS`). @default 180 */
  readonly settleSeconds: number;
  /** Time between reads while the count is short (`POLL_SECONDS`). @default 30 */
  readonly pollSeconds: number;
}

export interface PostTrafficCheckDependencies extends PostTrafficCheckConfig {
  readonly codeDeploy: CodeDeployClient;
  readonly cloudWatch: CloudWatchClient;
  readonly log?: (line: Record<string, unknown>) => void;
  /** @default Date.now */
  readonly nowMs?: () => number;
  /** @default a timer */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Longest `SETTLE_SECONDS`: the function's timeout is SETTLE_SECONDS + 60 s, and Lambda allows 900 s. */
export const MAX_SETTLE_SECONDS = 840;

/**
 * Time kept back from the invocation's remaining time for the last metrics read and the verdict
 * report, so a short function timeout cuts the settle wait instead of the report.
 */
export const REPORT_RESERVE_MS = 30_000;

const NAMESPACE = 'Ballast';
const MINUTE_MS = 60_000;
const MAX_PAGES = 10;

/** Tells the operator what to do when the new version saw too little traffic to be judged. */
export const IDLE_QUEUE_ADVICE = 'the queue was idle during the canary: send traffic and redeploy, '
  + 'or deploy with -c canaryMinRecords=0 to promote on the readiness check alone';

/**
 * Reads {@link PostTrafficCheckConfig} from `env`, failing at cold start with every missing or
 * malformed variable named.
 *
 * @example
 * const config = postTrafficCheckConfigFromEnv({ TARGET_WORKER_VERSION: '0.1.0+3f9a1c2e', MIN_RECORDS: '10' });
 * config.settleSeconds; // 180
 */
export function postTrafficCheckConfigFromEnv(env: NodeJS.ProcessEnv = process.env): PostTrafficCheckConfig {
  const problems: string[] = [];
  const text = (name: string, fallback?: string) => {
    const value = env[name] || fallback;
    if (!value) problems.push(`${name} is required`);
    return value ?? '';
  };
  const integer = (name: string, fallback: number | undefined, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const raw = env[name];
    if (raw === undefined || raw === '') {
      if (fallback === undefined) problems.push(`${name} is required (an integer from ${min})`);
      return fallback ?? 0;
    }
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? '' : ` to ${max}`}, got '${raw}'`);
    }
    return value;
  };
  const config: PostTrafficCheckConfig = {
    workerVersion: text('TARGET_WORKER_VERSION'),
    serviceName: text('TARGET_SERVICE_NAME', 'ballast-worker'),
    minRecords: integer('MIN_RECORDS', undefined, 1),
    settleSeconds: integer('SETTLE_SECONDS', 180, 0, MAX_SETTLE_SECONDS),
    pollSeconds: integer('POLL_SECONDS', 30, 1),
  };
  if (problems.length > 0) throw new Error(`post-traffic check configuration: ${problems.join('; ')}`);
  return config;
}

/**
 * CodeDeploy post-traffic hook: promotes the new worker version only if it handled at least
 * `minRecords` records (JobsProcessed + DuplicatesSuppressed for its `service` and `workerVersion`)
 * since the deployment was created. EMF datapoints land a minute or two late, so a short count is
 * re-read every `pollSeconds` for `settleSeconds` (never past the invocation's remaining time,
 * less {@link REPORT_RESERVE_MS}) before the verdict is Failed and CodeDeploy rolls back. Any error
 * reading the deployment or the metrics is Failed too; the verdict is always reported.
 *
 * @example
 * import { createPostTrafficCheck, postTrafficCheckConfigFromEnv } from './check.ts';
 * export const handler = createPostTrafficCheck({ codeDeploy, cloudWatch, ...postTrafficCheckConfigFromEnv() });
 */
export function createPostTrafficCheck(deps: PostTrafficCheckDependencies) {
  assertConfig(deps);
  const log = deps.log ?? ((line) => console.log(JSON.stringify(line)));
  const nowMs = deps.nowMs ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const settleMs = deps.settleSeconds * 1000;
  const pollMs = deps.pollSeconds * 1000;
  // A second bound besides the clock, should a clock or sleep not advance.
  const maxReads = Math.ceil(settleMs / pollMs) + 1;
  const subject = { service: deps.serviceName, workerVersion: deps.workerVersion, minRecords: deps.minRecords };

  const countSince = async (windowStartMs: number): Promise<number> => {
    const endMs = Math.max(windowStartMs + MINUTE_MS, Math.ceil(nowMs() / MINUTE_MS) * MINUTE_MS);
    const period = (endMs - windowStartMs) / 1000;
    const queries: MetricDataQuery[] = [METRICS.processed, METRICS.duplicates].map((name, index) => ({
      Id: `m${index}`,
      MetricStat: {
        Metric: {
          Namespace: NAMESPACE,
          MetricName: name,
          Dimensions: [{ Name: 'service', Value: deps.serviceName }, { Name: 'workerVersion', Value: deps.workerVersion }],
        },
        Period: period,
        Stat: 'Sum',
      },
    }));
    let total = 0;
    let token: string | undefined;
    let pages = 0;
    do {
      const out = await deps.cloudWatch.send(new GetMetricDataCommand({
        MetricDataQueries: queries, StartTime: new Date(windowStartMs), EndTime: new Date(endMs), NextToken: token,
      }));
      for (const result of out.MetricDataResults ?? []) {
        if (result.StatusCode === 'InternalError' || result.StatusCode === 'Forbidden') {
          throw new Error(`GetMetricData answered ${result.StatusCode} for ${result.Label ?? result.Id}`);
        }
        total += (result.Values ?? []).reduce((sum, value) => sum + value, 0);
      }
      token = out.NextToken;
      pages += 1;
    } while (token && pages < MAX_PAGES);
    return total;
  };

  return async (event: CodeDeployHookEvent, context?: HookContext): Promise<{ status: 'Succeeded' | 'Failed' }> => {
    let status: 'Succeeded' | 'Failed' = 'Failed';
    const startedMs = nowMs();
    const remainingMs = context?.getRemainingTimeInMillis?.();
    const deadlineMs = startedMs + (remainingMs === undefined ? settleMs : Math.min(settleMs, remainingMs - REPORT_RESERVE_MS));
    try {
      const deployment = await deps.codeDeploy.send(new GetDeploymentCommand({ deploymentId: event.DeploymentId }));
      const createTime = deployment.deploymentInfo?.createTime;
      if (!(createTime instanceof Date) || Number.isNaN(createTime.getTime())) {
        throw new Error(`deployment ${event.DeploymentId} has no createTime`);
      }
      // CloudWatch periods are whole minutes: one period from the start minute to now.
      const windowStartMs = Math.floor(createTime.getTime() / MINUTE_MS) * MINUTE_MS;
      let count = await countSince(windowStartMs);
      let reads = 1;
      while (count < deps.minRecords && reads < maxReads) {
        const waitMs = Math.min(pollMs, deadlineMs - nowMs());
        if (waitMs <= 0) break;
        await sleep(waitMs);
        count = await countSince(windowStartMs);
        reads += 1;
      }
      if (count >= deps.minRecords) status = 'Succeeded';
      log({
        level: status === 'Succeeded' ? 'INFO' : 'ERROR',
        message: status === 'Succeeded'
          ? `the new version handled ${count} records (at least ${deps.minRecords} required): promoting it`
          : `the new version handled ${count} of the ${deps.minRecords} records required, so it is not promoted `
            + `and CodeDeploy rolls back to the previous version. If ${IDLE_QUEUE_ADVICE}. `
            + 'Otherwise look at why it did not complete records (ballast doctor, its JobsRetried and SentToDlq).',
        verdict: status,
        count,
        ...subject,
        deploymentId: event.DeploymentId,
        windowStart: new Date(windowStartMs).toISOString(),
        reads,
        waitedSeconds: Math.round((nowMs() - startedMs) / 1000),
      });
    } catch (error) {
      log({ level: 'ERROR', message: 'could not read the deployment or the new version\'s metrics: not promoting it', verdict: status, ...subject, deploymentId: event.DeploymentId, error: String(error) });
    }
    await deps.codeDeploy.send(new PutLifecycleEventHookExecutionStatusCommand({
      deploymentId: event.DeploymentId,
      lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
      status,
    }));
    return { status };
  };
}

function assertConfig(config: PostTrafficCheckConfig): void {
  const problems: string[] = [];
  if (!config.workerVersion) problems.push('workerVersion is required');
  if (!config.serviceName) problems.push('serviceName is required');
  if (!Number.isInteger(config.minRecords) || config.minRecords < 1) problems.push(`minRecords must be an integer from 1, got ${config.minRecords}`);
  if (!Number.isInteger(config.settleSeconds) || config.settleSeconds < 0 || config.settleSeconds > MAX_SETTLE_SECONDS) {
    problems.push(`settleSeconds must be an integer from 0 to ${MAX_SETTLE_SECONDS}, got ${config.settleSeconds}`);
  }
  if (!Number.isInteger(config.pollSeconds) || config.pollSeconds < 1) problems.push(`pollSeconds must be an integer from 1, got ${config.pollSeconds}`);
  if (problems.length > 0) throw new Error(`post-traffic check: ${problems.join('; ')}`);
}
