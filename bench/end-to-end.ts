/**
 * `npm run bench:end-to-end`: jobs per second through the whole local stack — SQS → worker sandbox
 * → DynamoDB → stream → cache invalidator — for the registered workloads' traffic (the chaos run's
 * mix without faults), as the worker mapping's maximum concurrency and batch size change, with
 * where the time and the machine's CPU went. Each setting gets fresh engines and the stack
 * synthesized once, its mapping set as `-c` would set it. Prints a Markdown table, writes
 * bench/results/end-to-end.json.
 *
 *   npm run bench:end-to-end -- [--jobs 1500] [--seed 1]
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ownCpuSeconds, pidCpuSeconds, queueDepth, localClientConfig, startEngines, type LocalEngines } from '../local/engines/index.ts';
import { startLocalCloud } from '../local/cloud/index.ts';
import { synthesize, type SynthesizedStack } from '../local/cloud/assembly.ts';
import { startWorkloadFakes } from '../local/external-api/index.ts';
import { paceMessages } from '../local/demo/producer.ts';
import { chaosWorkload } from '../local/chaos/workload.ts';
import { numberFlag, scriptFlags } from '../local/flags.ts';
import { toolRegistry } from '../local/registry.ts';
import { METRICS } from '../shared/observability/index.ts';

/** The settings measured: concurrency 1 → 8 at batch 10, then batch 1 → 10 at concurrency 4. */
const SETTINGS = [
  { concurrency: 1, batchSize: 10 }, { concurrency: 2, batchSize: 10 }, { concurrency: 4, batchSize: 10 }, { concurrency: 8, batchSize: 10 },
  { concurrency: 4, batchSize: 1 }, { concurrency: 4, batchSize: 5 },
] as const;

const HELP = `npm run bench:end-to-end -- [flags]
  --jobs N    messages of the registered workloads' mix, after their openings (default 1500)
  --seed N    traffic seed (default 1)`;
const flags = scriptFlags({ options: { help: { type: 'boolean', default: false }, jobs: { type: 'string', default: '1500' }, seed: { type: 'string', default: '1' } } }, HELP);
const jobs = numberFlag(flags.jobs, 'jobs', 10, 1_000_000, true);
const seed = numberFlag(flags.seed, 'seed', 0, 2 ** 31, true);

interface Row {
  readonly concurrency: number;
  readonly batchSize: number;
  readonly messages: number;
  readonly jobsPerSecond: number;
  readonly seconds: number;
  /** Sent until the jobs queue was empty; then until the invalidator had applied every change. */
  readonly drainSeconds: number;
  readonly invalidationTailSeconds: number;
  readonly workerInvocations: number;
  /** Of the worker's sandboxes' available time (concurrency × drain time), the share spent in invocations. */
  readonly workerBusyShare: number;
  /** CPU seconds per 1,000 jobs: this process (SQS emulator, pollers, every sandbox, fakes), DynamoDB Local, Redis. */
  readonly cpuPerThousand: { readonly node: number; readonly dynamodb: number; readonly redis: number };
  readonly processed: number;
  readonly duplicates: number;
  /** Retries (a lock held, a transaction conflict on a hot item), each back on the queue after its backoff. */
  readonly retried: number;
  /** Refused by the workloads' rules (the mix overdraws and oversells on purpose), in the DLQ with their reason. */
  readonly deadLettered: number;
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const { workloads } = await toolRegistry(undefined);
const fakes = await startWorkloadFakes(workloads);
const [synthesized] = await synthesize({ context: { env: 'local', ...fakes.settings } });
if (!synthesized) throw new Error('the app synthesized no stack');
const workload = await chaosWorkload(workloads, { seed, jobs, producerDuplicateRate: 0.05, redeliveryRate: 0, poisonRate: 0 });
log(`traffic: ${workload.openings.length} openings, then ${workload.messages.length} messages of ${workload.parts.map((p) => p.workload).join(', ')} (5 % producer duplicates)`);
const rows: Row[] = [];
try {
  for (const setting of SETTINGS) rows.push(await measure(setting.concurrency, setting.batchSize));
} finally {
  await fakes.stop();
  rmSync(synthesized.assemblyDir, { recursive: true, force: true });
}

const results = { date: new Date().toISOString(), machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`, jobs, seed, rows };
writeFileSync(new URL('./results/end-to-end.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
console.log(`${workload.messages.length} messages (${jobs} jobs of the registered workloads' mix, 5 % producer duplicates) through the local stack, ${results.machine}.\n`);
console.log('| max concurrency | batch size | jobs/s | drained / invalidations applied | retries | worker sandboxes busy | CPU s per 1,000 jobs: node (SQS, pollers, sandboxes) · DynamoDB Local · Redis |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.concurrency} | ${r.batchSize} | ${r.jobsPerSecond.toFixed(0)} | ${r.drainSeconds.toFixed(1)} s / +${r.invalidationTailSeconds.toFixed(1)} s | ${r.retried} | ${(r.workerBusyShare * 100).toFixed(0)} % `
    + `| ${r.cpuPerThousand.node.toFixed(2)} · ${r.cpuPerThousand.dynamodb.toFixed(2)} · ${r.cpuPerThousand.redis.toFixed(2)} |`);
}

async function measure(concurrency: number, batchSize: number): Promise<Row> {
  const engines = await startEngines();
  const stack = withWorkerMapping(synthesized as SynthesizedStack, concurrency, batchSize);
  let workerName = '';
  let workerBusyMs = 0;
  let workerInvocations = 0;
  try {
    const cloud = await startLocalCloud({
      engines, stack,
      onInvocation: (functionName, summary) => {
        if (functionName !== workerName) return;
        workerInvocations += 1;
        workerBusyMs += (summary as { durationMs?: number }).durationMs ?? 0;
      },
    });
    const outputs = cloud.resources.outputs as Record<string, string>;
    workerName = outputs.WorkerFunctionName ?? '';
    const queueUrl = outputs.JobsQueueUrl as string;
    const queueName = queueUrl.split('/').at(-1) as string;
    const sqs = new SQSClient(localClientConfig(engines.sqs.endpoint));
    try {
      await paceMessages({ sqs, queueUrl, messages: workload.openings, durationMs: 0 });
      await until(() => queueDepth(engines.sqs, queueName) === 0, 120_000, 'the openings');
      await cloud.streamsIdle(60_000);
      const before = { ...processCpu(engines), processed: cloud.metrics.total(METRICS.processed), duplicates: cloud.metrics.total(METRICS.duplicates), retried: cloud.metrics.total(METRICS.retries) };
      workerBusyMs = 0;
      workerInvocations = 0;
      const startedMs = performance.now();
      await paceMessages({ sqs, queueUrl, messages: workload.messages, durationMs: 0 });
      await until(() => queueDepth(engines.sqs, queueName) === 0, 600_000, 'the jobs');
      const drainedMs = performance.now();
      await cloud.streamsIdle(120_000);
      const endedMs = performance.now();
      const after = processCpu(engines);
      const messages = workload.messages.length;
      const perThousand = (seconds: number) => (seconds / messages) * 1000;
      const row: Row = {
        concurrency, batchSize, messages,
        jobsPerSecond: messages / ((endedMs - startedMs) / 1000),
        seconds: (endedMs - startedMs) / 1000,
        drainSeconds: (drainedMs - startedMs) / 1000,
        invalidationTailSeconds: (endedMs - drainedMs) / 1000,
        workerInvocations,
        workerBusyShare: workerBusyMs / (concurrency * (drainedMs - startedMs)),
        cpuPerThousand: { node: perThousand(after.node - before.node), dynamodb: perThousand(after.dynamodb - before.dynamodb), redis: perThousand(after.redis - before.redis) },
        processed: cloud.metrics.total(METRICS.processed) - before.processed,
        duplicates: cloud.metrics.total(METRICS.duplicates) - before.duplicates,
        retried: cloud.metrics.total(METRICS.retries) - before.retried,
        deadLettered: queueDepth(engines.sqs, (outputs.JobsDeadLetterQueueUrl ?? '').split('/').at(-1) ?? ''),
      };
      log(`concurrency ${concurrency}, batch ${batchSize}: ${row.jobsPerSecond.toFixed(0)} jobs/s (${row.processed} processed, ${row.duplicates} duplicates, ${row.retried} retries, ${row.deadLettered} refused into the DLQ)`);
      return row;
    } finally {
      sqs.destroy();
      await cloud.stop();
    }
  } finally {
    await engines.stop();
  }
}

/** A copy of the stack whose worker mapping has these settings (its assembly copied: the cloud removes it on stop). */
function withWorkerMapping(stack: SynthesizedStack, concurrency: number, batchSize: number): SynthesizedStack {
  const template = structuredClone(stack.template) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>; Outputs: Record<string, { Value: unknown }> };
  const jobsQueue = (template.Outputs.JobsQueueUrl?.Value as { Ref?: string } | undefined)?.Ref;
  const mapping = Object.values(template.Resources).find((resource) => resource.Type === 'AWS::Lambda::EventSourceMapping'
    && (resource.Properties.EventSourceArn as { 'Fn::GetAtt'?: string[] } | undefined)?.['Fn::GetAtt']?.[0] === jobsQueue);
  if (!mapping) throw new Error('no event source mapping reads the jobs queue (JobsQueueUrl output)');
  mapping.Properties.BatchSize = batchSize;
  mapping.Properties.ScalingConfig = { MaximumConcurrency: concurrency };
  const assemblyDir = mkdtempSync(join(tmpdir(), 'ballast-e2e-'));
  cpSync(stack.assemblyDir, assemblyDir, { recursive: true });
  return { ...stack, assemblyDir, template: template as unknown as SynthesizedStack['template'] };
}

/** CPU seconds so far of this process (every thread) and of the engines' processes. */
function processCpu(engines: LocalEngines): { node: number; dynamodb: number; redis: number } {
  return { node: ownCpuSeconds(), dynamodb: pidCpuSeconds(engines.dynamodb.pid), redis: pidCpuSeconds(engines.redis.pid) };
}

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const startedMs = Date.now();
  while (!done()) {
    if (Date.now() - startedMs > timeoutMs) throw new Error(`${what} did not drain within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
