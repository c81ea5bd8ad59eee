// Not the cache's index: the worker only pings the cache, and the index brings the cache client.
import { cacheConnectionFromEnv, type CacheAuthConfig } from '../../shared/cache/connection-config.ts';
import { workloadSettings, type Workload } from '../../shared/workloads/index.ts';

/** The worker's settings, all from environment variables the CDK stack (or local cloud) sets. */
export interface WorkerConfig {
  readonly stateTableName: string;
  readonly controlTableName: string;
  readonly deadLetterQueueUrl: string;
  /** The registered workloads' declared settings (e.g. an external API's URL), each required. */
  readonly settings: Readonly<Record<string, string>>;
  readonly workerVersion: string;
  readonly maxReceiveCount: number;
  readonly leaseMs: number;
  readonly idempotencyRetentionSeconds: number;
  readonly concurrency: number;
  readonly deadlineMarginMs: number;
  /** How long a record may wait for a held lock before it goes to the DLQ (`SqsJobBatchOptions.maxLockWaitSeconds`). */
  readonly maxLockWaitSeconds: number;
  /** First retry delay; later ones grow exponentially with the receive count. */
  readonly retryBaseDelaySeconds: number;
  /**
   * The cache endpoint (`BALLAST_CACHE_URL`), checked by the readiness probe when set, through the
   * same client settings as the functions that use the cache (`cacheCluster`, `cacheAuth`).
   */
  readonly cacheUrl?: string;
  /** `BALLAST_CACHE_CLUSTER`, read when `BALLAST_CACHE_URL` is set. @default false */
  readonly cacheCluster?: boolean;
  /** `BALLAST_CACHE_AUTH` and its variables, read when `BALLAST_CACHE_URL` is set. @default { mode: 'none' } */
  readonly cacheAuth?: CacheAuthConfig;
}

/**
 * Reads {@link WorkerConfig} from `env`, failing at cold start with every missing or malformed
 * variable named, rather than on the first message.
 */
export function workerConfigFromEnv(env: NodeJS.ProcessEnv, workloads: readonly Workload[]): WorkerConfig {
  const problems: string[] = [];
  const text = (name: string, fallback?: string) => {
    const value = env[name] ?? fallback;
    if (!value) problems.push(`${name} is required`);
    return value ?? '';
  };
  const integer = (name: string, fallback: number, min: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be an integer ≥ ${min}, got '${raw}'`);
    return value;
  };
  const config: WorkerConfig = {
    stateTableName: text('STATE_TABLE_NAME'),
    controlTableName: text('CONTROL_TABLE_NAME'),
    deadLetterQueueUrl: text('DEAD_LETTER_QUEUE_URL'),
    settings: Object.fromEntries(workloadSettings(workloads).map((name) => [name, text(name)])),
    workerVersion: text('WORKER_VERSION', env.AWS_LAMBDA_FUNCTION_VERSION),
    maxReceiveCount: integer('MAX_RECEIVE_COUNT', 5, 1),
    leaseMs: integer('LOCK_LEASE_MS', 30_000, 1),
    idempotencyRetentionSeconds: integer('IDEMPOTENCY_RETENTION_SECONDS', 35 * 24 * 3600, 1),
    concurrency: integer('RECORD_CONCURRENCY', 10, 1),
    deadlineMarginMs: integer('DEADLINE_MARGIN_MS', 5_000, 0),
    maxLockWaitSeconds: integer('LOCK_WAIT_MAX_SECONDS', 3_600, 1),
    retryBaseDelaySeconds: integer('RETRY_BASE_DELAY_SECONDS', 2, 1),
    ...(env.BALLAST_CACHE_URL ? cacheConnectionFromEnv(env, problems) : {}),
  };
  if (problems.length > 0) throw new Error(`worker configuration: ${problems.join('; ')}`);
  return config;
}
