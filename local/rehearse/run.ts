import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { workloadEntities, type JobCatalog, type Registry, type Workload } from '../../shared/workloads/index.ts';
import type { Envelope, EnvelopeInput } from '../../shared/envelope/index.ts';
import { replayDeadLetters } from '../../shared/operations/index.ts';
import { countByReason } from '../../shared/operations/dlq-messages.ts';
import { reconcileReport, type ReconcileReport } from '../../shared/cache/index.ts';
import { METRICS } from '../../shared/observability/index.ts';
import { REASONS } from '../../shared/errors/index.ts';
import { localClientConfig, type EngineEndpoints } from '../engines/index.ts';
import { accessReport, type AccessReport } from '../iam/authorizer.ts';
import { evenDraws, startLocalCloud, type DeploymentEvent, type LocalCloud, type StackUpdateOutcome } from '../cloud/index.ts';
import type { SynthesizedStack } from '../cloud/assembly.ts';
import type { ExternalApi } from '../external-api/index.ts';
import { paceMessages } from '../demo/producer.ts';
import { statistic } from '../cloudwatch/index.ts';
import { trafficMinutes, trafficSteps } from '../codedeploy/traffic.ts';
import { chaosWorkload, type ChaosMessage } from '../chaos/workload.ts';
import { allDeadLetters, checkInvariants, type InvariantReport } from '../chaos/invariants.ts';
import { compareCache, drain } from '../chaos/run.ts';
import type { VersionTree } from './tree.ts';

/** What one worker version did during the rehearsal. */
export interface VersionReport {
  /** Lambda version number behind the alias. */
  readonly version: string;
  /** Its `WORKER_VERSION` (the `workerVersion` dimension of its metrics). */
  readonly workerVersion: string;
  readonly tree: string;
  readonly invocations: number;
  readonly processed: number;
  readonly duplicates: number;
  readonly retried: number;
  readonly deadLettered: number;
  /** Envelopes it could not read (retried or dead-lettered as `incompatible-version`). */
  readonly unreadable: number;
  /** p99 of its invocations' duration, ms; undefined when it ran none. */
  readonly p99DurationMs: number | undefined;
}

export interface RehearsalReport {
  readonly outcome: 'promote' | 'rollback';
  /** What decided: the deployment's own reason. */
  readonly reason: string;
  readonly update: StackUpdateOutcome;
  readonly events: readonly (DeploymentEvent & { readonly source: string })[];
  readonly versions: readonly VersionReport[];
  /** Every job of the run: how many were sent and where each ended. */
  readonly jobs: {
    readonly sent: number;
    readonly intents: number;
    /** Sent (and drained, for the openings) before the update started: all of it v1's work. */
    readonly beforeUpdate: number;
    readonly byV2Producer: number;
    /** Dead letters replayed after the update: those only v2 can read (after a promotion), and lock-busy ones. */
    readonly replayed: number;
    /** What is left in the DLQ at the end, by reason. */
    readonly deadLetters: Readonly<Record<string, number>>;
  };
  /**
   * Read API answers by phase (`v1` before the update, `update` during it, `after` it) and by the
   * cache schema version that served them (`x-cache-schema`), and the reads that failed (not 2xx or 404).
   */
  readonly reads: { readonly byPhase: Readonly<Record<string, Readonly<Record<string, number>>>>; readonly failed: number };
  /** Cache entries that differ from the table, per tree's cache schema (`v1 tree`, `v2 tree`). */
  readonly staleCache: Readonly<Record<string, number>>;
  readonly invariants: InvariantReport;
  /** The local IAM's decisions over the run (see {@link RehearsalOptions.revoke}). */
  readonly access: AccessReport;
  /** What `atEnd` printed (`ballast doctor`). */
  readonly doctor: readonly string[];
  readonly warnings: readonly string[];
  readonly seconds: number;
}

export interface RehearsalOptions {
  /** This checkout's workloads: the traffic's, and what a tree whose own cannot be loaded falls back to. */
  readonly registry: Registry;
  readonly engines: EngineEndpoints;
  readonly from: { readonly tree: VersionTree; readonly stack: SynthesizedStack };
  readonly to: { readonly tree: VersionTree; readonly stack: SynthesizedStack };
  /** The workloads' API fakes (their URLs replace the synthesized placeholders). */
  readonly apis: ReadonlyMap<string, ExternalApi>;
  readonly settings: Readonly<Record<string, string>>;
  readonly timeScale: number;
  /** Main-phase messages (the workloads' openings come on top). */
  readonly jobs: number;
  readonly seed: number;
  /** Grants taken away (by `Sid` or action) once v1 runs, before the traffic and the update: an upgrade that lost one. @default - none */
  readonly revoke?: readonly string[];
  readonly log: (line: string) => void;
  /** Called once the stack runs, before any traffic (e.g. to publish it for the CLI). */
  readonly onStarted?: (cloud: LocalCloud) => void | Promise<void>;
  /** Called after the checks, before the stack stops (e.g. `ballast doctor`); its lines go in the report. */
  readonly atEnd?: (cloud: LocalCloud) => Promise<readonly string[]>;
}

/** A rehearsal whose stack could not start (exit 3). */
export class StackStartError extends Error {
  override readonly name = 'StackStartError';
}

const INCOMPATIBLE = 'incompatible-version';
/** Traffic kept on after the update ends, at most: what follows a promotion or a rollback. */
const AFTER_UPDATE_MS = 10_000;
/** Share of the main phase sent on v1 alone before the deployment starts. */
const WARM_UP_SHARE = 0.15;

/**
 * One rehearsal: the stack on v1 under continuous traffic (the chaos run's workloads without
 * faults) and reads, a stack update to v2 through the local CloudFormation and CodeDeploy, v2's
 * producer writing from the deployment's start, then quiescence, the operator's replay of what
 * only the new version can read, and every job accounted for by the chaos run's invariants.
 */
export async function rehearse(options: RehearsalOptions): Promise<RehearsalReport> {
  const startedMs = Date.now();
  const { log } = options;
  const warnings = [...options.from.tree.warnings, ...options.to.tree.warnings];
  const workload = await chaosWorkload(options.registry.workloads, { seed: options.seed, jobs: options.jobs, producerDuplicateRate: 0.05, redeliveryRate: 0.02, poisonRate: 0.005 });
  const v2Producer = await producerOf(options.to.tree, warnings);

  let cloud: LocalCloud;
  try {
    cloud = await startLocalCloud({
      engines: options.engines, stack: options.from.stack, timeScale: options.timeScale, environmentOverrides: options.settings,
      // The canary's share spread evenly over its few invocations: the verdict is the version's, not the draws'.
      routingRandom: evenDraws(),
      onAlarm: ({ name, from, to, reason }) => log(`  alarm ${name}: ${from} → ${to} (${reason})`),
    });
  } catch (error) {
    throw new StackStartError(`the stack of ${options.from.tree.label} does not start locally: ${(error as Error).message}`);
  }
  for (const grant of options.revoke ?? []) {
    cloud.authorizer.revoke(grant);
    log(`  revoked ${grant} from every policy of the stack`);
  }
  const sqs = new SQSClient(localClientConfig(options.engines.sqs.endpoint));
  const dynamodb = new DynamoDBClient(localClientConfig(options.engines.dynamodb.endpoint));
  const documents = DynamoDBDocumentClient.from(dynamodb);
  try {
    const outputs = cloud.resources.outputs as Record<string, string>;
    const queueUrl = outputs.JobsQueueUrl as string;
    const group = cloud.resources.deploymentGroups[0];
    if (!group) throw new StackStartError(`the stack of ${options.from.tree.label} has no CodeDeploy deployment group on an alias: nothing to rehearse`);
    const failedChecks = cloud.preTrafficChecks.filter((check) => check.status !== 'Succeeded');
    if (failedChecks.length > 0) throw new StackStartError(`v1's own readiness check fails (${failedChecks.map((check) => check.status).join('; ')}): fix v1 before rehearsing an upgrade from it`);
    await options.onStarted?.(cloud);
    log(`[${since(startedMs)}] v1 (${options.from.tree.label}) runs: ${cloud.resources.functions.length} functions, ${cloud.resources.alarms.length} alarms; `
      + `${group.functionName}:${group.aliasName} deploys with ${group.configName}, rolled back by ${group.alarms.length} alarms`);

    log(`[${since(startedMs)}] openings: ${workload.openings.length} jobs the rest act on`);
    await paceMessages({ sqs, queueUrl, messages: workload.openings, durationMs: 0 });
    await drain(sqs, queueUrl, 120_000);

    const steps = trafficSteps(group.routing);
    const deploymentMs = (trafficMinutes(steps) * 60_000) / options.timeScale;
    // Traffic spans the warm-up, the whole deployment and as long again after it.
    const sendMs = Math.max(10_000, (deploymentMs + 10_000) / (1 - WARM_UP_SHARE) + 5_000);
    const warmUpCount = Math.floor(workload.messages.length * WARM_UP_SHARE);
    const warmUp = workload.messages.slice(0, warmUpCount);
    const rest = workload.messages.slice(warmUpCount).map((message) => ({ body: v2Producer(message) }));
    const byV2Producer = rest.filter((message, i) => message.body !== workload.messages[warmUpCount + i]?.body).length;
    log(`[${since(startedMs)}] traffic: ${workload.messages.length} messages over ${Math.round(sendMs / 1000)} s `
      + `(${Math.round(workload.messages.length / (sendMs / 1000))}/s) with reads; the deployment starts after ${warmUp.length}`);

    const reads: ReadCounts = { phase: 'v1', byPhase: {}, failed: 0 };
    let reading = true;
    const readers = readConcurrently(outputs.ReadApiUrl as string, workload.reads.flat(), () => reading, reads);
    await paceMessages({ sqs, queueUrl, messages: warmUp, durationMs: sendMs * WARM_UP_SHARE });

    const events: (DeploymentEvent & { source: string })[] = [];
    log(`[${since(startedMs)}] stack update to v2 (${options.to.tree.label}); v2's producer writes from now on`);
    const paced = new AbortController();
    let sentOfRest = 0;
    const sending = paceMessages({ sqs, queueUrl, messages: rest, durationMs: sendMs * (1 - WARM_UP_SHARE), signal: paced.signal, onSent: (n) => void (sentOfRest = n) });
    reads.phase = 'update';
    const update = await cloud.updateStack(options.to.stack, {
      onEvent: (event) => {
        events.push(event);
        log(`[${since(startedMs)}] ${event.source}: ${event.message}`);
      },
    });
    reads.phase = 'after';
    // An update that ended early (a rollback, a failed hook) needs no more than a short tail of traffic after it.
    const tail = setTimeout(() => paced.abort(), AFTER_UPDATE_MS);
    await sending;
    clearTimeout(tail);
    if (sentOfRest < rest.length) await paceMessages({ sqs, queueUrl, messages: rest.slice(sentOfRest), durationMs: AFTER_UPDATE_MS / 2 });
    log(`[${since(startedMs)}] all ${warmUp.length + rest.length} messages sent; draining`);
    await drain(sqs, queueUrl, 300_000, log);
    const outcome = update.status === 'UPDATE_COMPLETE' ? 'promote' : 'rollback';

    let replayed = 0;
    const replay = async (reason: string, why: string) => {
      const letters = (await allDeadLetters(sqs, outputs)).filter((letter) => letter.reason === reason);
      if (letters.length === 0) return;
      const tree = outcome === 'promote' ? options.to.tree : options.from.tree;
      log(`[${since(startedMs)}] ${letters.length} dead letters ${why}: ballast dlq replay --reason ${reason} (${outcome === 'promote' ? 'v2' : 'v1'}'s CLI)`);
      const { replayDeadLetters, JOB_CATALOG } = await operatorCli(tree, options.registry, warnings);
      const report = await replayDeadLetters(
        { sqs, deadLetterQueueUrl: outputs.JobsDeadLetterQueueUrl as string, defaultSourceQueueUrl: queueUrl },
        { filter: { reasons: [reason] }, documents, controlTableName: outputs.ControlTableName as string, catalog: JOB_CATALOG, max: 100_000, deleteDuplicates: true },
      );
      replayed += report.replayed;
      await drain(sqs, queueUrl, 300_000, log);
    };
    if (outcome === 'promote') await replay(INCOMPATIBLE, 'only v2 can read');
    // The traffic's hot accounts, not the update, put these here: a job that met a lock held by
    // another job on each of its receives, on a version older than the requeue of lock waits. The
    // runbook's answer is the same replay, and the jobs must then complete like every other.
    await replay(REASONS.lockBusy, 'that met a lock held on each of their receives');
    reading = false;
    await readers;
    await cloud.streamsIdle(120_000);
    await drain(sqs, outputs.InvalidatorFailureQueueUrl as string, 120_000, log);

    log(`[${since(startedMs)}] checking every job, the cache of both schemas and the locks`);
    // Every entry of both trees' cache schemas compared with the table: the invariant counts stale entries of either.
    const staleCache: Record<string, number> = {};
    const compared: ReconcileReport[] = [];
    for (const [label, tree] of [['v1 tree', options.from.tree], ['v2 tree', options.to.tree]] as const) {
      const report = await compareCache(outputs, documents, options.engines.redis, await entitiesOf(tree, options.registry, warnings));
      staleCache[label] = report.mismatches;
      compared.push(report);
    }
    const invariants = await checkInvariants({
      workload, documents, sqs, outputs, apis: options.apis, thrownInvocations: 0, nowMs: Date.now(),
      cache: reconcileReport(compared.reduce((sum, report) => sum + report.sampled, 0), compared.flatMap((report) => report.details)),
    });
    const deadLetters = Object.fromEntries(countByReason(await allDeadLetters(sqs, outputs)).map(({ reason, count }) => [reason, count]));
    const doctor = (await options.atEnd?.(cloud)) ?? [];
    return {
      outcome,
      reason: update.deployments.at(-1)?.reason ?? 'no deployment ran',
      update,
      events,
      versions: versionReports(cloud, group.functionName, group.aliasName, [options.from.tree.label, options.to.tree.label]),
      jobs: {
        sent: workload.openings.length + workload.messages.length + replayed, intents: workload.jobs.size,
        beforeUpdate: workload.openings.length + warmUp.length, byV2Producer, replayed, deadLetters,
      },
      reads: { byPhase: reads.byPhase, failed: reads.failed },
      staleCache,
      invariants,
      access: accessReport(cloud.authorizer, options.revoke ?? []),
      doctor,
      warnings,
      seconds: Math.round((Date.now() - startedMs) / 1000),
    };
  } finally {
    await cloud.stop({ graceMs: 3_000 });
    sqs.destroy();
    dynamodb.destroy();
  }
}

/** Per Lambda version of the deployed function: its Lambda metrics (alias + ExecutedVersion) and its ballast metrics (workerVersion). */
function versionReports(cloud: LocalCloud, functionName: string, alias: string, trees: readonly string[]): VersionReport[] {
  const { series } = cloud.metrics;
  // Each ballast metric has one dimension set (with `reason` for retries and dead letters): summing every matching series counts each datapoint once.
  const total = (name: string, where: Readonly<Record<string, string>>) => series.identities('Ballast', name)
    .filter((identity) => Object.entries(where).every(([key, value]) => identity.dimensions[key] === value))
    .reduce((sum, identity) => sum + series.values(identity).reduce((a, b) => a + b, 0), 0);
  return cloud.versions(functionName).map((version, index) => {
    const workerVersion = version.runtime.options.environment.WORKER_VERSION ?? 'unknown';
    const durations = series.values({
      namespace: 'AWS/Lambda', name: 'Duration', dimensions: { FunctionName: functionName, Resource: `${functionName}:${alias}`, ExecutedVersion: version.version },
    });
    const unreadable = { workerVersion, reason: INCOMPATIBLE };
    return {
      version: version.version,
      workerVersion,
      tree: trees[Math.min(index, trees.length - 1)] ?? '',
      invocations: durations.length,
      processed: total(METRICS.processed, { workerVersion }),
      duplicates: total(METRICS.duplicates, { workerVersion }),
      retried: total(METRICS.retries, { workerVersion }),
      deadLettered: total(METRICS.sentToDlq, { workerVersion }),
      unreadable: total(METRICS.retries, unreadable) + total(METRICS.sentToDlq, unreadable),
      p99DurationMs: durations.length > 0 ? Math.round(statistic('p99')(durations)) : undefined,
    };
  });
}

/** A module of another version's tree (its own code, this checkout's packages). */
async function fromTree<T>(tree: VersionTree, path: string): Promise<T> {
  return await import(pathToFileURL(join(tree.dir, path)).href) as T;
}

/**
 * v2's producer: re-creates each job's envelope with the v2 tree's `createEnvelope` (same intent,
 * key, ids and time), as producers upgraded with the release would write it. Poison stays as it is.
 */
async function producerOf(tree: VersionTree, warnings: string[]): Promise<(message: ChaosMessage) => string> {
  let create: ((input: EnvelopeInput) => Envelope) | undefined;
  try {
    ({ createEnvelope: create } = await fromTree<{ createEnvelope?: (input: EnvelopeInput) => Envelope }>(tree, 'shared/envelope/index.ts'));
  } catch (error) {
    warnings.push(`${tree.label}: its producer (shared/envelope createEnvelope) could not be loaded, so v1's envelopes are sent throughout: ${(error as Error).message}`);
  }
  return (message) => {
    if (!create || message.role === 'poison') return message.body;
    const original = JSON.parse(message.body) as Envelope;
    return JSON.stringify(create({
      type: original.type, resourceId: original.resourceId, payload: original.payload, idempotencyKey: original.idempotencyKey,
      jobId: original.jobId, traceId: original.traceId, producerVersion: 'rehearsal-v2', producedAt: new Date(original.producedAt),
    }));
  };
}

/**
 * The replay as the operator runs it after promotion: with the new version's CLI, whose envelope
 * parser reads what only the new version reads. Falls back to this checkout's, with a warning.
 */
async function operatorCli(tree: VersionTree, registry: Registry, warnings: string[]): Promise<{ replayDeadLetters: typeof replayDeadLetters; JOB_CATALOG: JobCatalog }> {
  try {
    const operations = await fromTree<{ replayDeadLetters: typeof replayDeadLetters }>(tree, 'shared/operations/index.ts');
    const own = await fromTree<{ JOB_CATALOG: JobCatalog }>(tree, TREE_REGISTRY);
    return { replayDeadLetters: operations.replayDeadLetters, JOB_CATALOG: own.JOB_CATALOG };
  } catch (error) {
    warnings.push(`${tree.label}: its CLI could not be loaded, so the replay ran with this checkout's: ${(error as Error).message}`);
    return { replayDeadLetters, JOB_CATALOG: registry.catalog };
  }
}

/** A tree's cached entities (its own registry and schema versions), or with a warning this checkout's when it has none to load. */
async function entitiesOf(tree: VersionTree, registry: Registry, warnings: string[]): Promise<ReturnType<typeof workloadEntities>> {
  try {
    const { WORKLOADS: workloads } = await fromTree<{ WORKLOADS: readonly Workload[] }>(tree, TREE_REGISTRY);
    return workloadEntities(workloads);
  } catch (error) {
    warnings.push(`${tree.label}: its cache entities could not be loaded, so this checkout's were compared instead: ${(error as Error).message}`);
    return workloadEntities(registry.workloads);
  }
}

/**
 * Where this repository's trees, at every commit a rehearsal may start from, keep their registry
 * (exporting `WORKLOADS` and `JOB_CATALOG`): a path inside the tree, read from that tree.
 */
const TREE_REGISTRY = 'workloads/registry.ts';

interface ReadCounts {
  /** Which phase the next answers count for. */
  phase: string;
  readonly byPhase: Record<string, Record<string, number>>;
  failed: number;
}

/** Two readers on the read API the whole time, counting answers by phase and by the schema version that served them. */
async function readConcurrently(readApiUrl: string, paths: readonly string[], going: () => boolean, counts: ReadCounts): Promise<void> {
  if (paths.length === 0) return;
  await Promise.all(Array.from({ length: 2 }, async () => {
    for (let i = 0; i < 1_000_000 && going(); i += 1) {
      const path = paths[Math.floor(Math.random() ** 2 * paths.length)];
      try {
        const response = await fetch(`${readApiUrl}${path}`);
        await response.arrayBuffer();
        // A read API older than the header does not say which schema answered.
        const schema = response.headers.get('x-cache-schema');
        const label = schema ? `v${schema}` : 'unlabelled';
        const phase = (counts.byPhase[counts.phase] ??= {});
        if (response.ok || response.status === 404) phase[label] = (phase[label] ?? 0) + 1;
        else counts.failed += 1;
      } catch {
        counts.failed += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }));
}

function since(startedMs: number): string {
  return `${((Date.now() - startedMs) / 1000).toFixed(1)}s`;
}
