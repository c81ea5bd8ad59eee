import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createLambdaContext } from '../../local/lambda/context.ts';
import type { ReadinessReport } from '../../shared/readiness/index.ts';
import { useWorkerHarness } from '../helpers/worker-harness.ts';

describe('worker readiness probe (what the pre-traffic hook asks a new version)', () => {
  const h = useWorkerHarness();
  const ask = async (handler: ReturnType<typeof h.worker>) =>
    (await (handler as unknown as (e: unknown, c: unknown) => Promise<unknown>)({ ballastReadiness: true },
      createLambdaContext({ functionName: 'worker', timeoutMs: 10_000 }))) as ReadinessReport;

  it('reports ready when tables, DLQ and cache answer and every supported envelope version parses', async () => {
    const queues = await h.queues();
    const report = await ask(h.worker(queues, { config: { cacheUrl: h.local.env.BALLAST_CACHE_URL } }));
    assert.equal(report.ready, true, JSON.stringify(report));
    assert.deepEqual(report.checks.map((check) => check.name),
      ['dynamodb state table', 'dynamodb control table', 'sqs dead-letter queue', 'cache', 'envelope v1']);
  });

  it('reports not ready, naming the failed dependency, when one is unreachable', async () => {
    const queues = await h.queues();
    const report = await ask(h.worker(queues, { config: { controlTableName: 'no-such-table', cacheUrl: 'redis://127.0.0.1:1' } }));
    assert.equal(report.ready, false);
    const failed = report.checks.filter((check) => !check.ok).map((check) => check.name);
    assert.deepEqual(failed, ['dynamodb control table', 'cache']);
  });

  it('reports the cache not ready, with its refusal, when it does not admit the credentials', async () => {
    // GIVEN the local cache, which has no password, and a worker that brings one
    const queues = await h.queues();
    const url = new URL(h.local.env.BALLAST_CACHE_URL as string);
    url.username = 'ballast';
    url.password = 'not-the-password';
    // WHEN the pre-traffic hook asks
    const report = await ask(h.worker(queues, { config: { cacheUrl: url.toString() } }));
    // THEN the cache check fails with what the server said, and never shows the password
    const cache = report.checks.find((check) => check.name === 'cache');
    assert.equal(cache?.ok, false);
    assert.match(cache?.detail ?? '', /did not answer PING: refused: (WRONGPASS|ERR)/);
    assert.doesNotMatch(JSON.stringify(report), /not-the-password/);
  });
});
