/**
 * Shared setup of the cache integration tests (not a test file itself): real engines, a state
 * table with its stream, cache clients that are closed after the file, table writers that mimic
 * the worker's versioned updates, and a DynamoDB client whose requests can be counted and held.
 */
import { after, before } from 'node:test';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  EntityCache, cacheScripts, connectCacheClient, createCacheClient, type EntityCacheOptions, type CachedEntity, type CacheClient, type CacheConnectionOptions, type EntityCacheKeys, type CacheScripts,
} from '../../shared/cache/index.ts';
import { accountEntity, accountKey, type Account } from '../../workloads/accounts/index.ts';
import { createObservability } from '../../shared/observability/index.ts';
import { createInvalidator } from '../../functions/cache-invalidator/invalidator.ts';
import { createReadApi } from '../../functions/read-api/read-api.ts';
import { useEngines } from './engines.ts';
import { streamEventReader } from './stream-events.ts';
import { createBallastTables } from '../../local/harness/tables.ts';

/** A document client on its own DynamoDB client, whose requests are counted and can be held. */
export interface ObservedDocuments {
  readonly documents: DynamoDBDocumentClient;
  /** Requests sent so far (one may not have reached DynamoDB yet). */
  requests(): number;
  /** Requests DynamoDB has answered so far (their responses may still be held). */
  answered(): number;
  /** From now on, responses (already served by DynamoDB) wait until the returned function is called. */
  holdResponses(): () => void;
}

export { waitFor } from './wait.ts';

export function useCacheFixture() {
  const local = useEngines();
  const observability = createObservability({ workerVersion: 'test' });
  const clients: CacheClient[] = [];
  const dynamoClients: DynamoDBClient[] = [];
  let stateTable = '';

  before(async () => {
    stateTable = (await createBallastTables(local.dynamodb, `cache-${randomUUID().slice(0, 8)}`)).state;
  });
  after(() => {
    for (const client of clients) client.disconnect();
    for (const client of dynamoClients) client.destroy();
  });

  const fixture = {
    local,
    observability,
    get stateTable() {
      return stateTable;
    },
    /** A lazily connecting cache client on the file's redis-server (closed after the file). */
    client(options: Partial<CacheConnectionOptions> = {}): CacheClient {
      const client = createCacheClient({ url: local.env.BALLAST_CACHE_URL ?? '', commandTimeoutMs: 300, connectTimeoutMs: 300, maxReconnectDelayMs: 200, ...options });
      clients.push(client);
      return client;
    },
    /** Like {@link client}, connected (commands fail fast on a client that is not connected yet). */
    async redis(options: Partial<CacheConnectionOptions> = {}): Promise<CacheClient> {
      const client = fixture.client(options);
      await connectCacheClient(client);
      return client;
    },
    observedDocuments(): ObservedDocuments {
      const client = new DynamoDBClient({});
      dynamoClients.push(client);
      let count = 0;
      let answered = 0;
      let gate: Promise<void> | undefined;
      client.middlewareStack.add((next) => async (args) => {
        count += 1;
        const result = await next(args);
        answered += 1;
        if (gate) await gate;
        return result;
      }, { step: 'finalizeRequest', name: 'observeRequests' });
      return {
        documents: DynamoDBDocumentClient.from(client),
        requests: () => count,
        answered: () => answered,
        holdResponses() {
          let release = () => {};
          gate = new Promise<void>((resolve) => (release = resolve));
          return () => {
            gate = undefined;
            release();
          };
        },
      };
    },
    /**
     * An EntityCache of the account example on the state table (its own Redis client unless one is
     * given); `schema` declares another release's schema versions of the account entity.
     */
    cache(options: Partial<EntityCacheOptions> & { schema?: Pick<CachedEntity, 'schemaVersion' | 'olderSchemaVersions'> } = {}): EntityCache {
      const { schema, ...rest } = options;
      return new EntityCache({
        redis: options.redis ?? fixture.client(), documents: local.documents, tableName: stateTable, observability,
        entities: [{ ...accountEntity, ...schema }], ...rest,
      });
    },
    invalidator(cache: EntityCache) {
      return createInvalidator({ cache, observability });
    },
    readApi(cache: EntityCache) {
      return createReadApi({ cache, observability });
    },
    /** Raw script access, to plant entries as a slow or lost reader would have left them. */
    async scripts(redis?: CacheClient) {
      return cacheScripts(redis ?? (await fixture.redis()));
    },
    /** A fill ticket of `keys` (failing the test if none is given). */
    async ticket(scripts: CacheScripts, keys: EntityCacheKeys, validForMs = 60_000): Promise<string> {
      const ticket = await scripts.ticket(keys, validForMs);
      if (ticket === undefined) throw new Error(`no fill ticket for ${keys.value}`);
      return ticket;
    },
    /** Fills an entry as a reader would (a ticket, then the fill), with no table read between: what a late or lost reader leaves behind. */
    async plant(keys: EntityCacheKeys, version: number, payload: string, redis?: CacheClient) {
      const scripts = cacheScripts(redis ?? (await fixture.redis()));
      return scripts.fill(keys, await fixture.ticket(scripts, keys), version, payload, 60_000);
    },
    streamReader() {
      return streamEventReader(local.dynamodb, local.streams, stateTable);
    },
    /** Creates the account at version 1, as the worker's first credit does. */
    async createAccount(accountId: string, balance = 100, profile?: Record<string, unknown>): Promise<Account> {
      const item: Account = { pk: accountKey(accountId), accountId, balance, version: 1, updatedAt: new Date().toISOString(), ...(profile ? { profile } : {}) };
      await local.documents.send(new PutCommand({ TableName: stateTable, Item: item }));
      return item;
    },
    /** Commits one change (+1 version), as the worker's versioned updates do; returns the new item. */
    async changeAccount(accountId: string, delta = 1): Promise<Account> {
      const { Attributes } = await local.documents.send(new UpdateCommand({
        TableName: stateTable,
        Key: { pk: accountKey(accountId) },
        UpdateExpression: 'SET updatedAt = :now ADD balance :delta, version :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':now': new Date().toISOString(), ':delta': delta, ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }));
      return Attributes as Account;
    },
    async deleteAccount(accountId: string): Promise<void> {
      await local.documents.send(new DeleteCommand({ TableName: stateTable, Key: { pk: accountKey(accountId) } }));
    },
  };
  return fixture;
}
