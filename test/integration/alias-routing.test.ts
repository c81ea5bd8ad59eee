import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { AliasRouting, evenDraws } from '../../local/cloud/index.ts';
import type { FunctionRuntime } from '../../local/lambda/function-runtime.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { useLocalCloud } from '../helpers/engines.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('alias routing: two versions of a function behind one alias', () => {
  it('routes the additional version its weight of the invocations; promote and roll back move the alias', () => {
    const runtime = (name: string) => ({ handler: async () => name }) as unknown as FunctionRuntime;
    let roll = -0.05; // draws 0.05, 0.15, 0.25, 0.35, ...: three in ten under 0.3
    const routing = new AliasRouting({ version: '1', runtime: runtime('v1') }, () => (roll = (roll + 0.1) % 1));
    assert.equal(routing.pick().version, '1');
    routing.route({ version: '2', runtime: runtime('v2') }, 0.3);
    const picks = Array.from({ length: 10 }, () => routing.pick().version);
    assert.equal(picks.filter((version) => version === '2').length, 3, picks.join(','));
    assert.throws(() => routing.route({ version: '1', runtime: runtime('v1') }, 0.5), /already/);
    assert.throws(() => routing.route({ version: '3', runtime: runtime('v3') }, 1.5), /between 0 and 1/);
    assert.equal(routing.rollBack()?.version, '2');
    assert.deepEqual([routing.additional, routing.pick().version], [undefined, '1']);
    routing.route({ version: '2', runtime: runtime('v2') }, 0.1);
    assert.equal(routing.promote().version, '1');
    assert.deepEqual([routing.primary.version, routing.additional], ['2', undefined]);
  });

  it('even draws spread any weight evenly: at 10 %, one invocation in every ten, never two in a row', () => {
    const routing = new AliasRouting({ version: '1', runtime: {} as never }, evenDraws());
    routing.route({ version: '2', runtime: {} as never }, 0.1);
    const picks = Array.from({ length: 64 }, () => routing.pick().version);
    for (let start = 0; start + 16 <= picks.length; start += 16) {
      const window = picks.slice(start, start + 16).filter((version) => version === '2').length;
      assert.ok(window >= 1 && window <= 2, `${window} of 16 in ${picks.join('')}`);
    }
    assert.ok(!picks.join('').includes('22'), picks.join(''));
  });

  describe('on the local cloud', () => {
    /** How each invocation of a queue mapping ended, for the failure messages: a version that processed nothing says why. */
    const invocations: string[] = [];
    const { local, cloud } = useLocalCloud({
      // Even draws: at a weight of 0.5, invocations alternate between the versions (random draws
      // sent all six of a run's batches to one version about once in 32 runs).
      routingRandom: evenDraws(),
      onInvocation: (functionName, summary) => {
        const { outcome, batchSize, durationMs, error } = summary as { outcome: string; batchSize: number; durationMs: number; error?: unknown };
        invocations.push(`${functionName}: ${outcome} ${batchSize} records in ${durationMs} ms${error ? ` (${String(error)})` : ''}`);
      },
    });

    async function sendCredits(prefix: string, count: number): Promise<void> {
      const queueUrl = cloud.resources.outputs.JobsQueueUrl as string;
      for (let start = 0; start < count; start += 10) {
        await local.sqs.send(new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: Math.min(10, count - start) }, (_, i) => ({
            Id: String(i), MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: `acc-${prefix}-${start + i}`, idempotencyKey: `${prefix}-${start + i}`, payload: { amount: 1 } })),
          })),
        }));
      }
      // Up to 150 s: past one visibility timeout (60 s locally), so a batch that failed on a loaded
      // machine has been delivered again before the counts are read.
      for (let i = 0; i < 300; i += 1) {
        const depth = await queueCounts(local.sqs, queueUrl);
        if (depth.visible + depth.inFlight + depth.delayed === 0) break;
        await sleep(500);
      }
      // A sandbox's log lines (and the EMF in them) reach the collector after its messages are deleted.
      const total = () => Object.values(cloud.metrics.breakdown('JobsProcessed', 'workerVersion')).reduce((a, b) => a + b, 0);
      const expected = (sent += count);
      for (let i = 0; i < 50 && total() < expected; i += 1) await sleep(100);
    }
    let sent = 0;

    it('a canary weight splits the worker\'s invocations between both versions; each stamps its own version on logs and metrics', async () => {
      const worker = cloud.resources.functions.find((fn) => fn.logicalId.startsWith('WorkerFunction'));
      assert.ok(worker);
      const routing = cloud.routing.get(worker.name) as AliasRouting;
      const v2 = cloud.publishVersion(worker.name, { environment: { WORKER_VERSION: 'rehearsal-v2' } });
      assert.equal(v2.version, '2');
      routing.route(v2, 0.5);
      await sendCredits('split', 60);
      const processed = cloud.metrics.breakdown('JobsProcessed', 'workerVersion');
      const v1Name = worker.environment.WORKER_VERSION as string;
      assert.ok((processed['rehearsal-v2'] ?? 0) > 0 && (processed[v1Name] ?? 0) > 0, `${JSON.stringify(processed)}\n${invocations.join('\n')}`);
      assert.equal((processed['rehearsal-v2'] ?? 0) + (processed[v1Name] ?? 0), 60, 'every job once, on one version or the other');
      const executed = (version: string) => cloud.metrics.series.identities('AWS/Lambda', 'Invocations')
        .some((identity) => identity.dimensions.FunctionName === worker.name && identity.dimensions.ExecutedVersion === version);
      assert.ok(executed('1') && executed('2'), 'Lambda\'s metrics name the version that ran');
      // WHEN the deployment promotes v2
      routing.promote();
      await sendCredits('promoted', 20);
      // THEN v1 takes no more traffic
      const after = cloud.metrics.breakdown('JobsProcessed', 'workerVersion');
      assert.equal(after[v1Name], processed[v1Name]);
      assert.equal(after['rehearsal-v2'], (processed['rehearsal-v2'] ?? 0) + 20);
    });
  });
});
