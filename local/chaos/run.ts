import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { connectCacheClient, EntityCache, createCacheClient, type CachedEntity } from '../../shared/cache/index.ts';
import { createObservability } from '../../shared/observability/index.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';
import type { JobCatalog, Registry } from '../../shared/workloads/index.ts';
import { replayDeadLetters } from '../../shared/operations/index.ts';
import type { DeadLetter } from '../../shared/operations/dlq-messages.ts';
import { queueCounts, type QueueCounts } from '../../shared/queues/index.ts';
import { localClientConfig, startEngines, type Engine } from '../engines/index.ts';
import { startLocalCloud } from '../cloud/index.ts';
import { accessReport, refusalMessage, type AccessReport } from '../iam/authorizer.ts';
import { InvocationError } from '../lambda/function-runtime.ts';
import { startWorkloadFakes, type ExternalApiChaos } from '../external-api/index.ts';
import { paceMessages } from '../demo/producer.ts';
import { snapshot } from '../demo/progress.ts';
import { fenceWatch, startDynamoDbFaultProxy } from '../faults/index.ts';
import { FunctionLogs } from './function-logs.ts';
import { holderStalls } from './holder-stalls.ts';
import { readerStalls } from './reader-stalls.ts';
import { workerRollout, type RolloutReport, type WorkerRollout } from './rollout.ts';
import { scheduleRedisFaults, splitRate } from './faults.ts';
import { allDeadLetters, checkInvariants, isKeyReuse, rightlyRejected, type InvariantReport } from './invariants.ts';
import { seededRandom } from './random.ts';
import { REGISTRY_CONTEXT } from '../registry.ts';
import { startReaders, type Readers } from './readers.ts';
import { chaosWorkload, type ChaosMessage, type ChaosWorkload } from './workload.ts';

/** Every fault the run injects, each with its rate (or schedule). */
export interface ChaosFaults {
  /** Invocations that finish their work, then die before returning. */
  readonly crashAfterWorkRate: number;
  /** Invocations whose sandbox dies before the handler runs. */
  readonly crashBeforeWorkRate: number;
  /** Invocations whose sandbox is killed while the handler runs (after a claim, mid external call, a commit in flight). */
  readonly crashDuringWorkRate: number;
  /** Invocations delayed past the function timeout. */
  readonly timeoutRate: number;
  /** DynamoDB requests from the functions answered by the fault proxy instead (split over its kinds). */
  readonly dynamodbRate: number;
  /** Requests to the workloads' API fakes: 5xx, slower than the lease, past the caller's timeout, 200 with a non-object body. */
  readonly externalRate: number;
  /**
   * Heartbeats and commits of the convoys' lock holders held on the way to DynamoDB until a newer
   * holder has taken the lock (at most {@link HOLDER_STALL_MS}), while the jobs behind them wait:
   * the holder still alive, its late write the fence must refuse.
   */
  readonly holderStallRate: number;
  /**
   * The read API's table reads answered late ({@link READER_STALL_MS}, on the way back): a hot item
   * is written and invalidated meanwhile, and the reader's late fill of the older version must be refused.
   */
  readonly readerStallRate: number;
  /** Redis: a FLUSHALL, a `CLIENT PAUSE`, and an outage (stopped, restarted empty), during the send phase. */
  readonly redis: boolean;
  /** How long the Redis outage lasts. */
  readonly redisOutageMs: number;
  /**
   * A worker rollout during the faults ({@link workerRollout}): a second version with its own lock
   * lease takes part of the invocations, is rolled back, takes half, and is promoted.
   */
  readonly rollout: boolean;
}

export const DEFAULT_FAULTS: ChaosFaults = {
  crashAfterWorkRate: 0.05, crashBeforeWorkRate: 0.05, crashDuringWorkRate: 0.1, timeoutRate: 0.02, dynamodbRate: 0.05, externalRate: 0.08, holderStallRate: 0.1,
  readerStallRate: 0.4, redis: true, redisOutageMs: 30_000, rollout: true,
};

export interface ChaosOptions {
  /** The app's workloads: their `local.chaos` traffic and invariants, their fakes, their entities. */
  readonly registry: Registry;
  readonly seed: number;
  readonly jobs: number;
  /** Messages sent per second in the main phase. @default 60 */
  readonly sendRate?: number;
  readonly faults: ChaosFaults;
  /** Progress: called about once a second. */
  readonly onProgress?: (progress: ChaosProgress) => void;
  readonly log: (line: string) => void;
  /** Give up draining after this long (the run then reports what it found). @default 20 minutes */
  readonly drainTimeoutMs?: number;
  /**
   * Grants taken away before the traffic, by statement `Sid` or by action (`dynamodb:BatchGetItem`):
   * what the stack does when a deploy loses one, shown in the report's `access`. @default - none
   */
  readonly revoke?: readonly string[];
}

export interface ChaosProgress {
  readonly phase: string;
  readonly sent: number;
  readonly total: number;
  readonly processed: number;
  readonly duplicates: number;
  readonly deadLettered: number;
  readonly faults: number;
  readonly violations: number;
}

export interface ChaosReport {
  readonly seed: number;
  readonly jobs: number;
  /** What the workloads' traffic ran over, e.g. `{ widgets: 200 }`. */
  readonly sizes: Readonly<Record<string, number>>;
  readonly messages: Record<string, number>;
  readonly injected: Record<string, number>;
  readonly phasesSeconds: Record<string, number>;
  readonly jobsPerSecond: number;
  readonly replayed: number;
  readonly deadLetterCopiesCollapsed: number;
  readonly invariants: InvariantReport;
  /** What each worker version did (by `WORKER_VERSION`), when the run rolled a second version out. */
  readonly rollout?: RolloutReport;
  /** The local IAM's decisions: calls allowed and refused by action, and the latest refusals as AWS words them. */
  readonly access: AccessReport;
  /** What the functions logged at WARN and above: how often, by message, and the lines about each violation's keys. */
  readonly functionLogs: { readonly counts: Record<string, number>; readonly aboutViolations: Record<string, Record<string, string[]>> };
}

const APP = fileURLToPath(new URL(`./app${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url));
/**
 * A stalled holder's write waits on the wire until a newer holder takes its lock, at most this
 * long: past the chaos stack's 1.5 s lease and the few seconds of visibility its waiters come back after.
 */
const HOLDER_STALL_MS = 6_000;
/**
 * A slow reader's table answer waits this long: past a hot item's next commit and its invalidation
 * (seconds behind the commit on this machine while the run is busy), within the chaos read API's
 * SDK request timeout (5 s: a quarter of its 20 s timeout, at most 5 s).
 */
const READER_STALL_MS = 3_500;
/** The readers chase the resources of the last this many messages sent (about a second's worth at the default rate). */
const RECENT_MESSAGES = 60;
/**
 * The convoys are sent once at most this many messages are visible on the jobs queue. The local
 * queue (fauxqs) puts a message whose visibility ends behind every visible one (SQS hands it out
 * again sooner), so behind the main phase's backlog a waiting job's receives came a backlog apart:
 * the holders finished between them, and whether any job waited out its receives depended on how
 * far behind the machine ran (the run on a slower machine requeued none). With the backlog down,
 * the jobs behind the lock are received again every one or two seconds, as on SQS.
 */
const CONVOY_BACKLOG = 20;
/** Over how long the convoys' jobs are sent: a few receives' worth, so they land in different batches. */
const CONVOY_SEND_MS = 3_000;
/** Main-phase messages that reuse an opening's key for another resource (a producer's bug the worker must refuse). */
const KEY_REUSE_RATE = 0.004;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The chaos run: the synthesized stack on the real engines, a seeded mix of jobs on shared
 * accounts, every fault kind at once, then every invariant checked after quiescence.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { faults, log } = options;
  const random = seededRandom(options.seed ^ 0x5eed);
  const workload = await chaosWorkload(options.registry.workloads, { seed: options.seed, jobs: options.jobs, convoys: true, keyReuseRate: KEY_REUSE_RATE });
  const convoyMessages = workload.convoys.flatMap((convoy) => convoy.jobs).map((job): ChaosMessage => ({ role: 'job', body: job.body, job }));
  const traffic = [...workload.messages, ...convoyMessages];
  const phases: Record<string, number> = {};
  let phase = 'start';
  let phaseStartedMs = Date.now();
  const enter = (next: string) => {
    phases[phase] = Number(((Date.now() - phaseStartedMs) / 1000).toFixed(1));
    phase = next;
    phaseStartedMs = Date.now();
    log(`chaos: ${next}`);
  };

  const engines = await startEngines();
  let redis: Engine = engines.redis;
  const fakes = await startWorkloadFakes(options.registry.workloads);
  // Besides the drawn faults, the service's item-level transaction conflicts, which DynamoDB Local
  // alone never produces: concurrent jobs on one item meet them as they would on AWS.
  // And every lock write it forwards goes past the fence watch, the `staleLockWrites` invariant's
  // witness, while the convoys' holders are stalled past their lease (its own draws: the other
  // faults' sequence stays as the seed gives it).
  const fences = fenceWatch();
  const stalls = holderStalls({
    resources: new Set(workload.convoys.map((convoy) => convoy.resourceId)), holdMs: HOLDER_STALL_MS, random: seededRandom(options.seed ^ 0xfe9ce), newestFence: fences.newestFence,
  });
  const entities = workloadEntities(options.registry.workloads);
  const slowReaders = readerStalls({ entities: entities.map((entity) => entity.name), holdMs: READER_STALL_MS, random: seededRandom(options.seed ^ 0x5100) });
  const proxy = await startDynamoDbFaultProxy({
    target: engines.dynamodb.endpoint, random, stallMs: 2_500, transactionConflicts: true, holdOf: stalls.holdOf, holdAnswerOf: slowReaders.holdAnswerOf,
    onAnswered: fences.observe,
  });
  const sqs = new SQSClient(localClientConfig(engines.sqs.endpoint));
  const dynamodb = new DynamoDBClient(localClientConfig(engines.dynamodb.endpoint));
  const documents = DynamoDBDocumentClient.from(dynamodb);
  const injected: Record<string, number> = {};
  let thrown = 0;
  let workerName = '';
  const logs = new FunctionLogs();
  let refusalsPrinted = 0;
  const cloud = await startLocalCloud({
    engines, appFile: APP, context: { ...fakes.settings, [REGISTRY_CONTEXT]: options.registry.module },
    // Every job's trace is read at the end: the store must not drop the early ones (a trace per message, with room for the rest).
    tracing: { maxTraces: 10_000 + 2 * (workload.openings.length + traffic.length) },
    functionEnvironment: { AWS_ENDPOINT_URL_DYNAMODB: proxy.endpoint },
    faults: {},
    onLog: logs.observe,
    // The report counts every refusal by action and keeps the latest; the first few are printed as they happen.
    onRefusal: (decision) => {
      refusalsPrinted += 1;
      if (refusalsPrinted <= 3) log(`chaos: local IAM refused: ${refusalMessage(decision)}${refusalsPrinted === 3 ? ' (further refusals: in the report)' : ''}`);
    },
    // (the rollout's routing draws from its own sequence, so the seed fixes its share too)
    routingRandom: seededRandom(options.seed ^ 0x4011),
    onInvocation: (functionName, summary) => {
      const { outcome, error } = summary as { outcome?: string; error?: unknown };
      if (outcome === 'timeout') injected.invocationTimeouts = (injected.invocationTimeouts ?? 0) + 1;
      if (outcome !== 'error' || !(error instanceof InvocationError)) return;
      if (error.errorType === 'Handler' && functionName === workerName) thrown += 1;
      if (/injected crash after/.test(error.message)) injected.crashesAfterWork = (injected.crashesAfterWork ?? 0) + 1;
      if (/injected crash before/.test(error.message)) injected.crashesBeforeWork = (injected.crashesBeforeWork ?? 0) + 1;
      if (/injected crash during/.test(error.message)) injected.crashesDuringWork = (injected.crashesDuringWork ?? 0) + 1;
    },
  });
  const { outputs } = cloud.resources as { outputs: Record<string, string> };
  for (const grant of options.revoke ?? []) {
    cloud.authorizer.revoke(grant);
    log(`chaos: revoked ${grant} from every policy of the stack`);
  }
  workerName = outputs.WorkerFunctionName ?? '';
  let sent = 0;
  const progress = setInterval(() => {
    const s = snapshot(cloud.metrics);
    options.onProgress?.({
      phase, sent, total: workload.openings.length + traffic.length, processed: s.processed, duplicates: s.duplicates,
      deadLettered: Object.values(s.deadLettered).reduce((a, b) => a + b, 0), faults: totalInjected(), violations: thrown,
    });
  }, 1_000);
  const totalInjected = () => Object.values(collectInjected()).reduce((a, b) => a + b, 0);
  const collectInjected = () => ({
    ...injected,
    holderStalls: stalls.held(),
    readerStalls: slowReaders.held(),
    ...prefixed('dynamodb', proxy.injected() as Record<string, number>),
    ...prefixed('dynamodb.itemConflict', proxy.conflicts()),
    // PAYMENTS_API_URL's faults as `payments.<kind>`.
    ...Object.assign({}, ...[...fakes.apis].map(([setting, api]) =>
      prefixed(setting.toLowerCase().replace(/(_api)?_url$/, '').replaceAll('_', '-'), api.injected() as Record<string, number>))) as Record<string, number>,
  });

  let readers: Readers | undefined;
  try {
    enter('openings');
    await paceMessages({ sqs, queueUrl: outputs.JobsQueueUrl as string, messages: workload.openings, durationMs: 0, onSent: (n) => void (sent = n) });
    await drain(sqs, outputs.JobsQueueUrl as string, 120_000);

    enter('send');
    cloud.faults.crashAfterWorkRate = faults.crashAfterWorkRate;
    cloud.faults.crashBeforeWorkRate = faults.crashBeforeWorkRate;
    cloud.faults.crashDuringWorkRate = faults.crashDuringWorkRate;
    cloud.faults.delayPastTimeoutRate = faults.timeoutRate;
    Object.assign(proxy.rates, splitRate(faults.dynamodbRate));
    stalls.rate = faults.holderStallRate;
    slowReaders.rate = faults.readerStallRate;
    const externalChaos: ExternalApiChaos = {
      random, serverErrorRate: faults.externalRate * 0.4, slowRate: faults.externalRate * 0.25, hangRate: faults.externalRate * 0.15,
      nonObjectRate: faults.externalRate * 0.2, slowMs: 2_500, hangMs: 8_000,
    };
    for (const [setting, api] of fakes.apis) {
      const convoys = workload.convoys.filter((convoy) => convoy.api === setting);
      api.setChaos({ ...externalChaos, slowResources: Object.fromEntries(convoys.map((convoy) => [convoy.resourceId, convoy.slowMs])) });
    }
    const sendMs = (workload.messages.length / (options.sendRate ?? 60)) * 1000;
    let recentlySent: () => string | undefined = () => undefined;
    // (the readers draw from their own sequence: their timing must not shift the faults' draws)
    const readerRandom = seededRandom(options.seed ^ 0x7ead);
    readers = startReaders({ readApiUrl: outputs.ReadApiUrl as string, paths: workload.reads, entities, random: readerRandom, recentlySent: () => recentlySent() });
    const rollout: WorkerRollout | undefined = faults.rollout ? workerRollout({ cloud, functionName: workerName, sendMs, injected, log }) : undefined;
    const redisFaults = faults.redis ? scheduleRedisFaults(sendMs, faults.redisOutageMs, () => redis, (next) => void (redis = next), injected, log) : Promise.resolve();
    const base = sent;
    let sentInPhase = 0;
    recentlySent = () => {
      const message = workload.messages[sentInPhase - 1 - Math.floor(readerRandom() * Math.min(sentInPhase, RECENT_MESSAGES))];
      return message && 'job' in message ? message.job.resourceId : undefined;
    };
    await paceMessages({
      sqs, queueUrl: outputs.JobsQueueUrl as string, messages: workload.messages, durationMs: sendMs, onSent: (n) => void (sent = base + (sentInPhase = n)),
    });
    recentlySent = () => undefined;
    await redisFaults;
    await rollout?.during;

    // The convoys' wait for the backlog and the drain share one budget.
    const drainDeadlineMs = Date.now() + (options.drainTimeoutMs ?? 20 * 60_000);
    if (convoyMessages.length > 0) {
      enter('convoy');
      await backlogDown(sqs, outputs.JobsQueueUrl as string, CONVOY_BACKLOG, drainDeadlineMs - Date.now(), log);
      const before = sent;
      await paceMessages({ sqs, queueUrl: outputs.JobsQueueUrl as string, messages: convoyMessages, durationMs: CONVOY_SEND_MS, onSent: (n) => void (sent = before + n) });
    }

    enter('drain');
    rollout?.promote();
    // (at least a minute: an empty queue takes two quiet polls a second apart to be called drained)
    await drain(sqs, outputs.JobsQueueUrl as string, Math.max(60_000, drainDeadlineMs - Date.now()), log);
    cloud.faults.crashAfterWorkRate = 0;
    cloud.faults.crashBeforeWorkRate = 0;
    cloud.faults.crashDuringWorkRate = 0;
    cloud.faults.delayPastTimeoutRate = 0;
    Object.assign(proxy.rates, splitRate(0));
    stalls.rate = 0;
    slowReaders.rate = 0;
    for (const api of fakes.apis.values()) api.setChaos(undefined);
    const reads = await readers.stop();
    log('chaos: waiting for the streams to go idle and the invalidation repair to drain');
    await cloud.streamsIdle(180_000);
    await drain(sqs, outputs.InvalidatorFailureQueueUrl as string, 180_000, log);

    enter('replay');
    const lettersBeforeReplay = await allDeadLetters(sqs, outputs);
    const replayed = await replayUnexpected(sqs, documents, outputs, workload, rightlyRejected(workload, fakes.apis), lettersBeforeReplay, options.registry.catalog);
    await drain(sqs, outputs.JobsQueueUrl as string, 300_000, log);
    await cloud.streamsIdle(180_000);
    await drain(sqs, outputs.InvalidatorFailureQueueUrl as string, 180_000, log);

    enter('check');
    const cacheReport = await compareCache(outputs, documents, redis, entities);
    const invariants = await checkInvariants({
      workload, documents, sqs, outputs, apis: fakes.apis,
      thrownInvocations: thrown, cache: cacheReport, nowMs: Date.now(), traces: (key) => cloud.traces.query(key), lettersBeforeReplay,
      fences: fences.report(), reads,
    });
    const letters = await allDeadLetters(sqs, outputs);
    enter('done');
    const busySeconds = (phases.send ?? 0) + (phases.convoy ?? 0) + (phases.drain ?? 0);
    return {
      seed: options.seed,
      jobs: workload.openings.length + traffic.length,
      sizes: workload.sizes,
      messages: Object.fromEntries(Object.entries(Object.groupBy(traffic, (m) => (m.role === 'job' ? m.job.kind : m.role))).map(([k, v]) => [k, v?.length ?? 0])),
      injected: collectInjected(),
      phasesSeconds: phases,
      jobsPerSecond: Number((traffic.length / Math.max(1, busySeconds)).toFixed(1)),
      replayed,
      deadLetterCopiesCollapsed: letters.reduce((sum, letter) => sum + letter.copies - 1, 0),
      invariants,
      ...(rollout ? { rollout: rollout.report() } : {}),
      access: accessReport(cloud.authorizer, options.revoke ?? []),
      functionLogs: {
        counts: logs.counts(),
        aboutViolations: logs.about(Object.fromEntries(Object.entries(invariants.examples).filter(([name]) => (invariants.counts[name] ?? 0) > 0))),
      },
    };
  } finally {
    clearInterval(progress);
    await readers?.stop();
    await cloud.stop({ graceMs: 3_000 });
    await proxy.stop();
    await fakes.stop();
    sqs.destroy();
    dynamodb.destroy();
    if (redis !== engines.redis) await redis.stop();
    await engines.stop();
  }
}

function prefixed(prefix: string, counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [`${prefix}.${k}`, v]));
}

/** Waits until the queue has nothing visible, in flight or delayed, twice in a row. */
export function drain(sqs: SQSClient, queueUrl: string, timeoutMs: number, log?: (line: string) => void): Promise<void> {
  return waitForQueue(sqs, queueUrl, (depth) => depth.visible + depth.inFlight + depth.delayed === 0, 2, timeoutMs,
    log && ((depth) => log(`chaos: waiting for ${queueUrl.split('/').at(-1)} to drain: ${JSON.stringify(depth)}`)));
}

/** Waits until at most `visible` messages are visible on the queue (in flight and delayed ones not counted). */
function backlogDown(sqs: SQSClient, queueUrl: string, visible: number, timeoutMs: number, log: (line: string) => void): Promise<void> {
  return waitForQueue(sqs, queueUrl, (depth) => depth.visible <= visible, 1, timeoutMs,
    (depth) => log(`chaos: waiting for the backlog to come down before the convoys: ${JSON.stringify(depth)}`));
}

/** Polls the queue's counts once a second until `done` holds `polls` times in a row; reports every 20 polls. */
async function waitForQueue(
  sqs: SQSClient, queueUrl: string, done: (depth: QueueCounts) => boolean, polls: number, timeoutMs: number, report?: (depth: QueueCounts) => void,
): Promise<void> {
  const startedMs = Date.now();
  let quiet = 0;
  for (let poll = 1; quiet < polls; poll += 1) {
    const depth = await queueCounts(sqs, queueUrl);
    quiet = done(depth) ? quiet + 1 : 0;
    if (quiet >= polls) return;
    if (Date.now() - startedMs > timeoutMs) throw new Error(`queue ${queueUrl} not ready after ${timeoutMs} ms: ${JSON.stringify(depth)}`);
    if (poll % 20 === 0) report?.(depth);
    await sleep(1_000);
  }
}

/**
 * Replays, as an operator would with `ballast dlq replay`, the valid jobs the fault schedule (not
 * their content) put in the DLQ: exhausted retries, SQS redrives of crashed invocations.
 */
async function replayUnexpected(
  sqs: SQSClient, documents: DynamoDBDocumentClient, outputs: Record<string, string>, workload: ChaosWorkload,
  rejected: ReadonlyMap<string, ReadonlySet<string>>, letters: readonly DeadLetter[], catalog: JobCatalog,
): Promise<number> {
  const messageIds = letters.filter((letter) => {
    const job = workload.jobs.get(letter.idempotencyKey ?? '');
    // A reused key's letter is where it belongs, whatever its reason: replaying it could only fail again.
    if (!job || isKeyReuse(workload, letter)) return false;
    return !job.allowedReasons.includes(letter.reason as never) && !(rejected.get(letter.reason)?.has(job.idempotencyKey) ?? false);
  }).map((letter) => letter.messageId);
  if (messageIds.length === 0) return 0;
  const report = await replayDeadLetters(
    { sqs, deadLetterQueueUrl: outputs.JobsDeadLetterQueueUrl as string, defaultSourceQueueUrl: outputs.JobsQueueUrl as string },
    { filter: { messageIds }, documents, controlTableName: outputs.ControlTableName as string, catalog, max: 100_000, deleteDuplicates: true },
  );
  return report.replayed;
}

/** Every cache entry compared with the table, nothing repaired (of `entities`: by default this tree's). */
export async function compareCache(outputs: Record<string, string>, documents: DynamoDBDocumentClient, redis: Pick<Engine, 'endpoint'>, entities: readonly CachedEntity[]) {
  const client = createCacheClient({ url: redis.endpoint, commandTimeoutMs: 5_000 });
  try {
    await connectCacheClient(client);
    const cache = new EntityCache({
      redis: client, documents, tableName: outputs.StateTableName as string, observability: createObservability({ workerVersion: 'chaos-check' }),
      entities,
    });
    return await cache.reconcile({ sample: Infinity, repair: false });
  } finally {
    client.disconnect();
  }
}
