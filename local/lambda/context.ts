import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { LOCAL_REGION } from '../engines/engine.ts';

/** Account id of the local cloud, as fauxqs also uses it in queue URLs and ARNs. */
export const LOCAL_ACCOUNT_ID = '000000000000';

/** Longest timeout a Lambda function may have (15 minutes). */
export const MAX_FUNCTION_TIMEOUT_MS = 900_000;

export interface LambdaContextOptions {
  readonly functionName: string;
  /** @default '$LATEST' */
  readonly functionVersion?: string;
  /** @default 128 */
  readonly memoryLimitInMB?: number;
  /** The function's configured timeout; `getRemainingTimeInMillis()` counts down from it. */
  readonly timeoutMs: number;
  /** @default - a fresh random UUID, as Lambda gives every invocation */
  readonly awsRequestId?: string;
  /** Clock used for the countdown. @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * Builds the `context` one Lambda invocation receives. Handlers budget their work with
 * `getRemainingTimeInMillis()` (stop taking new records, give up a lock in time), so locally it
 * must count down from the function timeout exactly as on AWS, starting when the context is
 * created, i.e. right before the handler is called.
 *
 * The callback-era methods (`done`, `succeed`, `fail`) throw: the Node.js 24 runtime only supports
 * async handlers, so code relying on them would break on AWS too.
 *
 * @example
 * import { createLambdaContext } from '../local/lambda/context.ts';
 * const context = createLambdaContext({ functionName: 'ballast-worker', timeoutMs: 30_000 });
 * context.getRemainingTimeInMillis(); // ≈ 30000, then less
 */
export function createLambdaContext(options: LambdaContextOptions): Context {
  const { functionName, functionVersion = '$LATEST', memoryLimitInMB = 128, timeoutMs, nowMs = Date.now } = options;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_FUNCTION_TIMEOUT_MS) {
    throw new RangeError(`createLambdaContext: timeoutMs must be above 0 and at most ${MAX_FUNCTION_TIMEOUT_MS}; got ${timeoutMs}. Pass the function's timeout in milliseconds.`);
  }
  if (!functionName) throw new TypeError('createLambdaContext: functionName must be a non-empty string.');
  const deadlineMs = nowMs() + timeoutMs;
  const unsupported = (name: string) => () => {
    throw new Error(`context.${name}() is not supported by the Node.js 24 runtime; return a value from (or throw in) an async handler instead.`);
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion,
    invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${functionName}`,
    memoryLimitInMB: String(memoryLimitInMB),
    awsRequestId: options.awsRequestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: logStreamName(functionVersion, nowMs()),
    getRemainingTimeInMillis: () => Math.max(0, Math.floor(deadlineMs - nowMs())),
    done: unsupported('done'),
    fail: unsupported('fail'),
    succeed: unsupported('succeed'),
  };
}

/** Lambda's log stream name: `2026/08/14/[$LATEST]` followed by 32 hex digits naming the sandbox. */
function logStreamName(functionVersion: string, nowMs: number): string {
  const day = new Date(nowMs).toISOString().slice(0, 10).replaceAll('-', '/');
  return `${day}/[${functionVersion}]${randomBytes(16).toString('hex')}`;
}
