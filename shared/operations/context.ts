import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ElastiCacheClient } from '@aws-sdk/client-elasticache';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { StackTarget } from './discovery.ts';

/** The SDK clients of one CLI run, created with the SDK's normal credential/region/endpoint resolution. */
export interface Clients {
  readonly sqs: SQSClient;
  readonly documents: DynamoDBDocumentClient;
  readonly cloudwatch: CloudWatchClient;
  readonly elasticache: ElastiCacheClient;
}

/** Everything a command needs: the stack and its clients. */
export interface OpsContext {
  readonly stack: StackTarget;
  readonly clients: Clients;
  /** The cache URL (the `CacheUrl` output, or `BALLAST_CACHE_URL`), if the stack has one. */
  readonly cacheUrl: string | undefined;
  /** Whether this environment has a CloudWatch endpoint (AWS always; a local cloud when it serves one). */
  readonly hasCloudWatch: boolean;
  /** Whether this environment has an ElastiCache control plane (AWS; not emulated locally). */
  readonly hasElastiCache: boolean;
}

/** Lets tests (and embedders) bring their own clients, e.g. one with middleware. */
export type ClientOverrides = Partial<Clients>;

export function createContext(stack: StackTarget, overrides: ClientOverrides = {}): OpsContext {
  const dynamodb = overrides.documents ? undefined : new DynamoDBClient({});
  const local = stack.source === 'local-file';
  return {
    stack,
    clients: {
      sqs: overrides.sqs ?? new SQSClient({}),
      documents: overrides.documents ?? DynamoDBDocumentClient.from(dynamodb as DynamoDBClient),
      cloudwatch: overrides.cloudwatch ?? new CloudWatchClient({ maxAttempts: 2 }),
      elasticache: overrides.elasticache ?? new ElastiCacheClient({ maxAttempts: 2 }),
    },
    cacheUrl: stack.outputs.CacheUrl ?? process.env.BALLAST_CACHE_URL,
    hasCloudWatch: !local || Boolean(process.env.AWS_ENDPOINT_URL_CLOUDWATCH),
    hasElastiCache: !local || Boolean(process.env.AWS_ENDPOINT_URL_ELASTICACHE),
  };
}

/** Closes the clients this context created (not the overrides a caller owns). */
export function closeContext(context: OpsContext, overrides: ClientOverrides = {}): void {
  for (const name of ['sqs', 'cloudwatch', 'elasticache', 'documents'] as const) {
    if (!overrides[name]) context.clients[name].destroy();
  }
}
