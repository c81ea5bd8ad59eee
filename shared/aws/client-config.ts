import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { NoOpLogger } from '@smithy/core/client';

/** The SDK's logger interface (every client takes the same). */
type SdkLogger = NonNullable<DynamoDBClientConfig['logger']>;

/** What every AWS SDK client of a ballast function is created with. */
export interface AwsClientConfig {
  readonly requestHandler: {
    readonly connectionTimeout: number;
    readonly requestTimeout: number;
    /** Without it the SDK only logs a warning when `requestTimeout` passes, and keeps waiting. */
    readonly throwOnRequestTimeout: true;
  };
  /** {@link QUIET_LOGGER}. */
  readonly logger: SdkLogger;
}

/**
 * The SDK's default logger (a `NoOpLogger`, so its warnings still go to the console where the SDK
 * sends them then), without the work the default costs. The SDK hands a failed request's input to
 * `logger.error` after copying it through its sensitive-data filter, schema walk and all, even
 * when the logger discards it: for a group commit DynamoDB cancelled (a duplicate, a conflict) that
 * is every attribute of every item in the group, about a tenth of the worker's CPU per record as
 * the service behaves (`npm run bench:throughput`). The SDK calls `error` and `info` only when the
 * logger has them (`logger?.error?.(…)`, `logger.info?.(…)`), so this one has neither.
 */
export const QUIET_LOGGER: SdkLogger = Object.assign(new NoOpLogger(), { error: undefined, info: undefined });

/** Set by the `BallastFunction` construct to the function's own timeout, in ms. */
export const FUNCTION_TIMEOUT_ENV = 'BALLAST_FUNCTION_TIMEOUT_MS';

/**
 * Connection and request timeouts for the SDK clients of a function, derived from the function's
 * timeout (`BALLAST_FUNCTION_TIMEOUT_MS`): a request may take a quarter of it (at least 250 ms, at
 * most 5 s) and connecting 1 s (at most a tenth), so one hung call — a half-open connection,
 * a stalled endpoint — is abandoned and retried long before it can eat the invocation. The SDK's
 * defaults have no request timeout at all.
 *
 * @example
 * const sqs = new SQSClient(awsClientConfig());
 */
export function awsClientConfig(env: NodeJS.ProcessEnv = process.env): AwsClientConfig {
  const raw = env[FUNCTION_TIMEOUT_ENV];
  const timeoutMs = raw === undefined || raw === '' ? 30_000 : Number(raw);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new Error(`${FUNCTION_TIMEOUT_ENV} must be a positive number of milliseconds, got '${raw}'`);
  }
  return {
    requestHandler: {
      connectionTimeout: Math.min(1_000, Math.ceil(timeoutMs / 10)),
      requestTimeout: Math.min(5_000, Math.max(250, Math.floor(timeoutMs / 4))),
      throwOnRequestTimeout: true,
    },
    logger: QUIET_LOGGER,
  };
}
