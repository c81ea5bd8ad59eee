import { after, before } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { engineEnvironment, startEngines, type LocalEngines } from '../../local/engines/index.ts';
import { startLocalCloud, type LocalCloud, type LocalCloudOptions } from '../../local/cloud/index.ts';

/** What a test suite gets from {@link useEngines}; read it inside tests, after `before` ran. */
export interface EngineFixture {
  readonly engines: LocalEngines;
  /** The AWS_* / BALLAST_* variables pointing at the engines (also applied to `process.env`). */
  readonly env: Record<string, string>;
  readonly dynamodb: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly streams: DynamoDBStreamsClient;
  readonly sqs: SQSClient;
  /** Registers cleanup to run (last registered first) before the engines stop, e.g. a local cloud's stop. */
  beforeStop(cleanup: () => Promise<unknown>): void;
}

/**
 * Starts real DynamoDB Local, fauxqs and redis-server for the current test file, points the AWS
 * SDK at them through the standard `AWS_ENDPOINT_URL_<SERVICE>` variables, and stops them after
 * the file's tests, pass or fail. Clients take endpoints from the environment, as handlers do.
 */
export function useEngines(): EngineFixture {
  let fixture: EngineFixture | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  before(async () => {
    const engines = await startEngines();
    const env = engineEnvironment(engines);
    Object.assign(process.env, env);
    const dynamodb = new DynamoDBClient({});
    fixture = {
      engines,
      env,
      dynamodb,
      documents: DynamoDBDocumentClient.from(dynamodb),
      streams: new DynamoDBStreamsClient({}),
      sqs: new SQSClient({}),
      beforeStop: (cleanup) => void cleanups.push(cleanup),
    };
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    if (!fixture) return;
    fixture.dynamodb.destroy();
    fixture.streams.destroy();
    fixture.sqs.destroy();
    await fixture.engines.stop();
  });
  return new Proxy({} as EngineFixture, {
    get(_target, key: keyof EngineFixture) {
      if (!fixture) throw new Error('useEngines(): the engines start in a before() hook; read the fixture inside a test');
      return fixture[key];
    },
  });
}

/**
 * {@link useEngines} plus the shipped stack on them (`startLocalCloud`, env=local), started in a
 * `before` hook and stopped before the engines. Read `cloud` inside tests, as the engine fixture.
 */
export function useLocalCloud(options: Omit<LocalCloudOptions, 'engines'> = {}): { readonly local: EngineFixture; readonly cloud: LocalCloud } {
  const local = useEngines();
  let started: LocalCloud | undefined;
  before(async () => {
    const cloud = await startLocalCloud({ ...options, engines: local.engines });
    started = cloud;
    local.beforeStop(() => cloud.stop({ graceMs: 5_000 }));
  });
  const cloud = new Proxy({} as LocalCloud, {
    get(_target, key: keyof LocalCloud) {
      if (!started) throw new Error('useLocalCloud(): the cloud starts in a before() hook; read it inside a test');
      return started[key];
    },
  });
  return { local, cloud };
}
