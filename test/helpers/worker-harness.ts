/**
 * The worker harness of `@ballast-stack/ballast/testing` for this repository's suites: on the
 * file's engines (`useEngines`), started and stopped by node:test hooks, over the example
 * registry, with the examples' fakes and items at hand.
 */
import { before, after } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope, type Envelope, type EnvelopeInput } from '../../shared/envelope/index.ts';
import type { ExternalApi } from '../../local/external-api/index.ts';
import { startWorkerHarness, type WorkerHarness } from '../../local/harness/worker-harness.ts';
import { accountKey, PARTNER_API_URL, type Account } from '../../workloads/accounts/index.ts';
import { CARRIER_API_URL } from '../../workloads/inventory/index.ts';
import { registry } from '../fixtures/workloads/registry.ts';
import { useEngines } from './engines.ts';

export type { TestQueues } from '../../local/harness/worker-harness.ts';

export function useWorkerHarness() {
  const local = useEngines();
  let started: WorkerHarness | undefined;
  before(async () => {
    started = await startWorkerHarness({ registry, engines: local.engines });
  });
  after(async () => {
    await started?.stop();
  });
  const h = () => {
    if (!started) throw new Error('useWorkerHarness(): the harness starts in a before() hook; read it inside a test');
    return started;
  };
  return {
    get local() { return local; },
    get partner(): ExternalApi { return h().api(PARTNER_API_URL); },
    get carrier(): ExternalApi { return h().api(CARRIER_API_URL); },
    get tables() { return h().tables; },
    get documents() { return h().documents; },
    roundTrips: () => h().roundTrips(),
    resetRoundTrips: () => h().resetRoundTrips(),
    queues: (...args: Parameters<WorkerHarness['queues']>) => h().queues(...args),
    config: (...args: Parameters<WorkerHarness['config']>) => h().config(...args),
    worker: (...args: Parameters<WorkerHarness['worker']>) => h().worker(...args),
    send: (...args: Parameters<WorkerHarness['send']>) => h().send(...args),
    receive: (...args: Parameters<WorkerHarness['receive']>) => h().receive(...args),
    deliver: (...args: Parameters<WorkerHarness['deliver']>) => h().deliver(...args),
    drain: (...args: Parameters<WorkerHarness['drain']>) => h().drain(...args),
    deadLetters: (...args: Parameters<WorkerHarness['deadLetters']>) => h().deadLetters(...args),
    /** An `account.credit` of 100 unless told otherwise. */
    envelope(input: Partial<EnvelopeInput> & { resourceId: string }): Envelope {
      return createEnvelope({ type: 'account.credit', payload: { amount: 100 }, producerVersion: 'test', ...input });
    },
    async account(accountId: string): Promise<Account | undefined> {
      const out = await local.documents.send(new GetCommand({ TableName: h().tables.state, Key: { pk: accountKey(accountId) }, ConsistentRead: true }));
      return out.Item as Account | undefined;
    },
  };
}
