import { startDynamoDb } from './dynamodb.ts';
import { startRedis } from './redis.ts';
import { startSqs, type SqsEngine } from './sqs.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type Engine } from './engine.ts';

export { DYNAMODB_TARGET_PREFIX, dynamoDbLocalDir, dynamoDbOperation, startDynamoDb } from './dynamodb.ts';
export { startRedis } from './redis.ts';
export { oldestMessageSentAtMs, queueDepth, startSqs, type QueueActivity, type SqsEngine } from './sqs.ts';
export { freePort } from './readiness.ts';
export { machineCpuTicks, ownCpuSeconds, pidCpuSeconds } from './cpu.ts';
export { ENGINE_OWNER_ENV, isRunning } from './supervised-process.ts';
export { LOCAL_CREDENTIALS, LOCAL_REGION, localClientConfig, type Engine } from './engine.ts';

/** The three engines of the local cloud. */
export interface LocalEngines {
  readonly dynamodb: Engine;
  readonly sqs: SqsEngine;
  readonly redis: Engine;
  /** Stops all three; safe to call more than once. */
  stop(): Promise<void>;
}

/** Where the three engines listen; enough for another process to use engines this one started. */
export interface EngineEndpoints {
  readonly dynamodb: { readonly endpoint: string };
  /**
   * An engine started in this process ({@link startSqs}) also brings its store and its activity,
   * from which the local cloud derives the SQS metrics no client can read (sends, receives, deletes,
   * message sizes, the oldest message's age).
   */
  readonly sqs: { readonly endpoint: string } & Partial<Pick<SqsEngine, 'store' | 'onActivity'>>;
  readonly redis: { readonly endpoint: string; readonly port: number };
}

/**
 * Starts DynamoDB Local, fauxqs and redis-server on free ports, in parallel.
 * If one fails to start, the others are stopped before the error is rethrown.
 */
export async function startEngines(): Promise<LocalEngines> {
  const started = await Promise.allSettled([startDynamoDb(), startSqs(), startRedis()]);
  const engines = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    await Promise.allSettled(engines.map((engine) => engine.stop()));
    throw failure.reason;
  }
  const [dynamodb, sqs, redis] = engines as [Engine, SqsEngine, Engine];
  return { dynamodb, sqs, redis, stop: async () => void (await Promise.allSettled(engines.map((engine) => engine.stop()))) };
}

/**
 * The environment that points the AWS SDK (through its standard `AWS_ENDPOINT_URL_<SERVICE>`
 * variables) and ballast's cache client at the engines. Handler code never knows it runs locally.
 */
export function engineEnvironment(engines: EngineEndpoints): Record<string, string> {
  return {
    AWS_REGION: LOCAL_REGION,
    AWS_DEFAULT_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: engines.dynamodb.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: engines.dynamodb.endpoint,
    AWS_ENDPOINT_URL_SQS: engines.sqs.endpoint,
    BALLAST_CACHE_URL: engines.redis.endpoint,
  };
}
