/**
 * `npm run bench:round-trips`: DynamoDB requests per job, ballast vs AWS Powertools idempotency, on
 * DynamoDB Local, counted by the same SDK middleware. Both run the same credit (one conditional
 * update of the account); Powertools wraps it with `makeIdempotent` and its DynamoDB persistence
 * layer, ballast commits it with the idempotency record in one transaction. Writes
 * bench/results/round-trips.json and prints a Markdown table for the README.
 */
import { writeFileSync } from 'node:fs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDb } from '../../../local/engines/index.ts';
import { createEnvelope } from '../../../shared/envelope/index.ts';
import { IdempotencyStore } from '../../../shared/idempotency/index.ts';
import { accountKey } from '../index.ts';
import { creditJob } from '../index.ts';
import { createBallastTables } from '../../../test/helpers/tables.ts';
import { createObservability } from '../../../shared/observability/index.ts';
import { createLambdaContext } from '../../../local/lambda/context.ts';

const JOBS = 200;
const engine = await startDynamoDb();
try {
  let requests = 0;
  const client = new DynamoDBClient({ endpoint: engine.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  client.middlewareStack.add((next) => async (args) => {
    requests += 1;
    return next(args);
  }, { step: 'finalizeRequest', name: 'countRequests' });
  const documents = DynamoDBDocumentClient.from(client);
  const tables = await createBallastTables(client, 'bench');
  await client.send(new CreateTableCommand({
    TableName: 'powertools-idempotency', BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
  }));

  /** Average requests per job over JOBS first-time jobs, then over their duplicates. */
  async function measure(run: (envelope: ReturnType<typeof createEnvelope>) => Promise<unknown>) {
    const envelopes = Array.from({ length: JOBS }, (_, i) => createEnvelope({ type: 'account.credit', resourceId: `acc-${i % 20}`, payload: { amount: 5 } }));
    requests = 0;
    for (const envelope of envelopes) await run(envelope);
    const firstTime = requests / JOBS;
    requests = 0;
    for (const envelope of envelopes) await run(envelope);
    return { firstTime, duplicate: requests / JOBS };
  }

  // Powertools: its record (in progress → completed) around the same business write.
  const credit = async (event: { resourceId: string; payload: { amount: number } }) => {
    await documents.send(new UpdateCommand({
      TableName: tables.state, Key: { pk: accountKey(event.resourceId) },
      UpdateExpression: 'ADD balance :amount, version :one', ExpressionAttributeValues: { ':amount': event.payload.amount, ':one': 1 },
    }));
    return { credited: event.payload.amount };
  };
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'idempotencyKey', throwOnNoIdempotencyKey: true });
  config.registerLambdaContext(createLambdaContext({ functionName: 'bench', timeoutMs: 900_000 }));
  const powertoolsCredit = makeIdempotent(credit, {
    persistenceStore: new DynamoDBPersistenceLayer({ tableName: 'powertools-idempotency', awsSdkV3Client: client }),
    config,
  });
  const powertools = await measure((envelope) => powertoolsCredit(envelope as never));

  // ballast: the record and the business write in one transaction.
  const store = new IdempotencyStore({ documents, tableName: tables.control });
  const job = creditJob({ stateTableName: tables.state });
  const logger = createObservability({ workerVersion: 'bench' }).logger;
  const ballast = await measure(async (envelope) => {
    const payload = job.payload.parse(envelope.payload);
    const plan = await job.plan({ envelope, payload, attempt: 1, logger, signal: new AbortController().signal });
    return store.commitOnce({ ...envelope, payload }, plan);
  });

  const rows = [
    { implementation: 'AWS Powertools idempotency (makeIdempotent + DynamoDBPersistenceLayer)', ...powertools, atomic: false },
    { implementation: 'ballast (IdempotencyStore.commitOnce)', ...ballast, atomic: true },
  ];
  writeFileSync(new URL('../../../bench/results/round-trips.json', import.meta.url), `${JSON.stringify({ date: new Date().toISOString(), jobs: JOBS, rows }, null, 2)}\n`);
  console.log('| implementation | requests per first-time job | per duplicate | record and effect atomic |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.implementation} | ${r.firstTime.toFixed(2)} | ${r.duplicate.toFixed(2)} | ${r.atomic ? 'yes' : 'no'} |`);
  client.destroy();
} finally {
  await engine.stop();
}
