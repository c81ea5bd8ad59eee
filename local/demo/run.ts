import type { SQSClient } from '@aws-sdk/client-sqs';
import type { LocalCloud } from '../cloud/index.ts';
import { paceMessages } from './producer.ts';
import { queueCounts } from '../../shared/queues/index.ts';
import { progressLine, snapshot } from './progress.ts';
import { demoWorkload } from './workload.ts';
import type { Workload } from '../../shared/workloads/index.ts';

export interface DemoOptions {
  readonly cloud: LocalCloud;
  /** Whose demo traffic to send (each workload's `local.demo`). */
  readonly workloads: readonly Workload[];
  readonly sqs: SQSClient;
  readonly jobs: number;
  readonly durationMs: number;
  readonly log: (line: string) => void;
  readonly isShuttingDown: () => boolean;
  /** Give up waiting for the queues to drain after this long. @default 150_000 */
  readonly drainTimeoutMs?: number;
}

/**
 * Runs the demo: paces the workloads' traffic onto the jobs queue, reads their cached entities through the read API the
 * whole time, shows live progress, and waits until every message is accounted for (processed,
 * suppressed as a duplicate, or dead-lettered with its reason). Resolves with a summary line.
 */
export async function runDemo(options: DemoOptions): Promise<string> {
  const { cloud, sqs, log } = options;
  const queueUrl = cloud.resources.outputs.JobsQueueUrl;
  const dlqUrl = cloud.resources.outputs.JobsDeadLetterQueueUrl;
  const readApi = cloud.resources.outputs.ReadApiUrl;
  if (!queueUrl || !dlqUrl) throw new Error('the stack has no JobsQueueUrl / JobsDeadLetterQueueUrl output for the demo to use');
  const { messages, reads: paths } = await demoWorkload(options.workloads, { jobs: options.jobs });
  const startedAtMs = Date.now();
  let sent = 0;
  let producing = true;
  const producer = paceMessages({ sqs, queueUrl, messages, durationMs: options.durationMs, onSent: (n) => void (sent = n) })
    .finally(() => void (producing = false));

  // Concurrent reads: 10 a second through the Function URL while the demo runs.
  let reads = 0;
  const reader = (async () => {
    if (!readApi || paths.length === 0) return;
    while (producing || sent > accounted()) {
      const path = paths[Math.floor(Math.random() * paths.length)];
      await fetch(`${readApi}${path}`).then((r) => r.arrayBuffer()).catch(() => undefined);
      reads += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (options.isShuttingDown() || Date.now() - startedAtMs > options.durationMs + (options.drainTimeoutMs ?? 150_000)) return;
    }
  })();

  const interactive = process.stdout.isTTY === true;
  let lastPrintMs = 0;
  function accounted(): number {
    const s = snapshot(cloud.metrics);
    return s.processed + s.duplicates + Object.values(s.deadLettered).reduce((a, b) => a + b, 0);
  }
  const deadlineMs = startedAtMs + options.durationMs + (options.drainTimeoutMs ?? 150_000);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if (options.isShuttingDown()) return 'interrupted';
    const depth = await queueCounts(sqs, queueUrl);
    const line = progressLine(Date.now() - startedAtMs, sent, messages.length, depth, snapshot(cloud.metrics));
    if (interactive) process.stdout.write(`\r\x1b[2K${line}`);
    else if (Date.now() - lastPrintMs >= 5_000) {
      log(line);
      lastPrintMs = Date.now();
    }
    const drained = !producing && depth.visible + depth.inFlight + depth.delayed === 0;
    if (drained && accounted() >= messages.length) break;
    if (Date.now() > deadlineMs) {
      if (interactive) process.stdout.write('\n');
      log(`demo: gave up waiting after ${Math.round((Date.now() - startedAtMs) / 1000)}s with ${accounted()} of ${messages.length} accounted for`);
      break;
    }
  }
  if (interactive) process.stdout.write('\n');
  await producer;
  await reader;
  await cloud.streamsIdle(20_000).catch(() => undefined);
  const s = snapshot(cloud.metrics);
  const dlqDepth = (await queueCounts(sqs, dlqUrl)).visible;
  const byKind = Object.entries(Object.groupBy(messages, (m) => m.kind)).map(([kind, list]) => `${kind} ${list?.length ?? 0}`).join(', ');
  const dlqTotal = Object.values(s.deadLettered).reduce((a, b) => a + b, 0);
  log(`  sent        ${messages.length} (${byKind})`);
  log(`  processed   ${s.processed}`);
  log(`  duplicates  ${s.duplicates} suppressed`);
  log(`  retries     ${s.retries}`);
  log(`  DLQ         ${dlqTotal} (${Object.entries(s.deadLettered).map(([r, n]) => `${r} ${n}`).join(', ') || 'none'}); DLQ depth ${dlqDepth}`);
  log(`  reads       ${reads}, cache hit ratio ${s.cacheHitRatio === undefined ? '-' : `${(s.cacheHitRatio * 100).toFixed(1)}%`}`);
  log(`  invalidation lag p50 ${s.invalidationLagP50Ms ?? '-'} ms, p99 ${s.invalidationLagP99Ms ?? '-'} ms`);
  const total = s.processed + s.duplicates + dlqTotal;
  return `${total} of ${messages.length} jobs accounted for (processed ${s.processed} + duplicates ${s.duplicates} + dead-lettered ${dlqTotal}) in ${Math.round((Date.now() - startedAtMs) / 1000)}s`;
}
