/** The local console: the stack's own dashboard, alarms, deployments and dead letters, live in a browser. */
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localClientConfig, type EngineEndpoints } from '../engines/index.ts';
import type { LocalCloud } from '../cloud/index.ts';
import type { LocalEndpoint } from '../http.ts';
import type { JobCatalog } from '../../shared/workloads/job-types.ts';
import { serveConsole } from './server.ts';

export { serveConsole, type ConsoleOptions } from './server.ts';

/** Serves the console of `cloud`, with clients of its engines for the dead-letter views (what `npm start` and `npm run rehearse` open). */
export function serveConsoleOf(cloud: LocalCloud, engines: EngineEndpoints, catalog: JobCatalog, port = 0): Promise<LocalEndpoint> {
  const sqs = new SQSClient(localClientConfig(engines.sqs.endpoint));
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient(localClientConfig(engines.dynamodb.endpoint)));
  return serveConsole({ cloud, sqs, documents, catalog, port });
}
