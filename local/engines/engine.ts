/** One running local engine. */
export interface Engine {
  /** Short name: `dynamodb`, `sqs` or `redis`. */
  readonly name: string;
  /** URL that clients connect to. */
  readonly endpoint: string;
  readonly port: number;
  /** Process id of the engine (this process for in-process engines). */
  readonly pid: number;
  /** Stops the engine and waits until its process is gone. Safe to call twice. */
  stop(): Promise<void>;
}

/** Region the local cloud pretends to be in. */
export const LOCAL_REGION = 'us-east-1';

/** Dummy credentials: the engines accept any, the SDK insists on some. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/**
 * SDK client settings for the local cloud's own clients (pollers, provisioning, the chaos run):
 * an engine that stops answering must fail a request, not hang a poller forever. The request
 * timeout outlives SQS's 20-second long poll.
 */
export function localClientConfig(endpoint: string) {
  return {
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    endpoint,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 30_000, throwOnRequestTimeout: true },
  } as const;
}
