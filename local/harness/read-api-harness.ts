import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { createCacheClient, EntityCache } from '../../shared/cache/index.ts';
import { createObservability } from '../../shared/observability/index.ts';
import { workloadEntities, type Registry } from '../../shared/workloads/index.ts';
import { createReadApi } from '../../functions/read-api/read-api.ts';
import { localClientConfig, type EngineEndpoints } from '../engines/index.ts';

export interface ReadApiHarnessOptions {
  /** The app's workloads: every cached entity with a route is served. */
  readonly registry: Registry;
  /** Running engines, e.g. a worker harness's (`h.engines`). */
  readonly engines: EngineEndpoints;
  /** The state table it reads, e.g. a worker harness's (`h.tables.state`). */
  readonly stateTableName: string;
}

/** What {@link startReadApiHarness} gives: the read API as deployed, called as its Function URL would be. */
export interface ReadApiHarness {
  /** `GET <path>`, e.g. `get('orders/o-1')`: the status, the headers (`x-cache`) and the parsed body. */
  get(path: string): Promise<{ readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: unknown }>;
  stop(): Promise<void>;
}

/**
 * The read API over the registry's cached entities on the real engines (the table, redis-server),
 * for a workload's tests of what its readers see after its jobs ran.
 */
export async function startReadApiHarness(options: ReadApiHarnessOptions): Promise<ReadApiHarness> {
  const redis = createCacheClient({ url: options.engines.redis.endpoint });
  const dynamodb = new DynamoDBClient(localClientConfig(options.engines.dynamodb.endpoint));
  const observability = createObservability({ workerVersion: 'test' });
  const cache = new EntityCache({
    redis, documents: DynamoDBDocumentClient.from(dynamodb), tableName: options.stateTableName, observability,
    entities: workloadEntities(options.registry.workloads),
  });
  const handler = createReadApi({ cache, observability });
  return {
    async get(path) {
      const rawPath = `/${path.replace(/^\//, '')}`;
      const event = { rawPath, requestContext: { http: { method: 'GET' }, requestId: 'test' } } as unknown as APIGatewayProxyEventV2;
      const response = await handler(event);
      const text = typeof response.body === 'string' ? response.body : '';
      return {
        status: response.statusCode ?? 200,
        headers: Object.fromEntries(Object.entries(response.headers ?? {}).map(([key, value]) => [key, String(value)])),
        body: text ? JSON.parse(text) as unknown : undefined,
      };
    },
    async stop() {
      redis.disconnect();
      dynamodb.destroy();
    },
  };
}
