/**
 * `npm run rehearse -- --from <git-ref> [--to <git-ref> | --to-dir <dir>] [--env staging]
 * [--time-scale 10] [--jobs 1200] [--expect promote|rollback] [--seed 7] [--out report.json] [--console-port 0]
 * [--revoke <Sid or action>]...` (a grant taken away from every policy once v1 runs: an upgrade that lost one)
 *
 * While it runs, the local console (printed URL) shows the stack's dashboard, alarms and the
 * deployment's timeline.
 *
 * Rehearses a worker upgrade on the local engines: v1 built from `--from` (a git worktree,
 * synthesized and bundled by its own CDK app), v2 from the working tree (or `--to` / `--to-dir`),
 * the stack started on v1 under continuous traffic and reads, then updated to v2 through the
 * local CloudFormation and CodeDeploy with the template's own deployment config, hooks and
 * rollback alarms, on a metric clock `--time-scale` times faster than real time.
 *
 * Exit codes: 0 the outcome is `--expect` (promote by default) and every job is accounted for;
 * 1 otherwise; 2 bad input (an unknown ref, a tree that does not build); 3 the stack cannot start.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { engineEnvironment, LOCAL_REGION, startEngines, type LocalEngines } from '../engines/index.ts';
import { startWorkloadFakes } from '../external-api/index.ts';
import { toolRegistry } from '../registry.ts';
import { serveConsoleOf } from '../console/index.ts';
import type { LocalEndpoint } from '../http.ts';
import { workloadSettings } from '../../shared/workloads/index.ts';
import { writeLocalCloudFile } from '../../shared/discovery/index.ts';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { buildVersion, deployedWorkerVersion, RehearsalInputError, treeAtRef, treeCopy, type VersionTree } from './tree.ts';
import { rehearse, StackStartError } from './run.ts';
import { formatReport } from './report.ts';

const EXIT = { ok: 0, unexpected: 1, badInput: 2, cannotStart: 3 } as const;
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const log = (line = '') => process.stdout.write(`${line}\n`);

const trees: VersionTree[] = [];
let engines: LocalEngines | undefined;
let fakes: Awaited<ReturnType<typeof startWorkloadFakes>> | undefined;
const assemblies: string[] = [];
const cleanUp = async () => {
  await fakes?.stop().catch(() => undefined);
  await engines?.stop().catch(() => undefined);
  for (const tree of trees) tree.remove();
  for (const dir of assemblies) rmSync(dir, { recursive: true, force: true });
};
const fail = async (code: number, message: string): Promise<never> => {
  log(`rehearse: ${message}`);
  await cleanUp();
  process.exit(code);
};
process.on('SIGINT', () => void fail(130, 'interrupted'));
process.on('SIGTERM', () => void fail(143, 'terminated'));

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        from: { type: 'string' }, to: { type: 'string' }, 'to-dir': { type: 'string' }, env: { type: 'string', default: 'staging' },
        'time-scale': { type: 'string', default: '10' }, jobs: { type: 'string', default: '1200' }, expect: { type: 'string' },
        seed: { type: 'string', default: '7' }, out: { type: 'string' }, 'console-port': { type: 'string', default: '0' }, registry: { type: 'string' },
        revoke: { type: 'string', multiple: true },
      },
    }).values;
  } catch (error) {
    return error as Error;
  }
})();
if (parsed instanceof Error) await fail(EXIT.badInput, parsed.message);
const flags = parsed instanceof Error ? undefined : parsed;
const problems: string[] = [];
const whole = (name: string, min: number, max: number) => {
  const raw = String(flags?.[name as keyof typeof flags] ?? '');
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) problems.push(`--${name} must be a whole number from ${min} to ${max}, got '${raw}'`);
  return value;
};
if (!flags?.from) problems.push('--from <git-ref> is required (the version deployed now, e.g. --from HEAD or --from v1.4.0)');
if (flags?.to && flags['to-dir']) problems.push('give --to <git-ref> or --to-dir <dir>, not both');
if (flags?.expect !== undefined && !['promote', 'rollback'].includes(flags.expect)) problems.push(`--expect must be promote or rollback, got '${flags.expect}'`);
if (!(ENVIRONMENT_NAMES as readonly string[]).includes(flags?.env ?? '')) problems.push(`--env must be one of ${ENVIRONMENT_NAMES.join(', ')}, got '${flags?.env}'`);
const timeScale = whole('time-scale', 1, 600);
const jobs = whole('jobs', 50, 100_000);
const seed = whole('seed', 0, 2 ** 31 - 1);
if (problems.length > 0 || !flags) await fail(EXIT.badInput, problems.join('; '));
const env = String(flags?.env);
const registry = await toolRegistry(flags?.registry).catch((error: unknown) => fail(EXIT.badInput, (error as Error).message));
const expect = flags?.expect as 'promote' | 'rollback' | undefined;

try {
  const from = treeAtRef(REPO, String(flags?.from));
  trees.push(from);
  const to = flags?.to ? treeAtRef(REPO, flags.to) : treeCopy(flags?.['to-dir'] ?? REPO, flags?.['to-dir'] ? `--to-dir ${flags['to-dir']}` : 'working tree', REPO);
  trees.push(to);
  log(`rehearse: v1 = ${from.label}, v2 = ${to.label}, env ${env}, time × ${timeScale}, ${jobs} jobs`);

  // Each setting synthesizes as a placeholder (outside env=local a *_URL one must be https);
  // the functions are pointed at the local fakes instead.
  const context = {
    env, alarmEmail: 'rehearsal@example.com',
    ...Object.fromEntries(workloadSettings(registry.workloads).map((name) => [name, `https://${name.toLowerCase().replaceAll('_', '-')}.rehearsal.invalid`])),
  };
  log(`synthesizing and bundling both versions (cdk synth -c env=${env}) ...`);
  const [v1, built] = await Promise.all([buildVersion(from, context), buildVersion(to, context)]);
  assemblies.push(v1.assemblyDir, built.assemblyDir);
  let v2 = built;
  const workerVersion = deployedWorkerVersion(v1);
  if (workerVersion && workerVersion === deployedWorkerVersion(built)) {
    // Same bundle, same version: cdk deploy would publish no version and run no deployment at all.
    log(`v1 and v2 bundle the same worker (${workerVersion}): cdk deploy would run no deployment; rehearsing a forced redeploy `
      + `(-c workerVersion=${workerVersion}.redeploy) so the canary, its hooks and alarms still run`);
    v2 = await buildVersion(to, { ...context, workerVersion: `${workerVersion}.redeploy` });
    assemblies.push(v2.assemblyDir);
  }

  log('starting engines: DynamoDB Local (java), fauxqs (in-process), redis-server ...');
  try {
    engines = await startEngines();
  } catch (error) {
    await fail(EXIT.cannotStart, `the engines did not start: ${(error as Error).message}`);
  }
  fakes = await startWorkloadFakes(registry.workloads);
  const settings = fakes.settings;

  const localFile = join(tmpdir(), `ballast-rehearse-${process.pid}.json`);
  let consoleEndpoint: LocalEndpoint | undefined;
  const report = await rehearse({
    registry, engines: engines as LocalEngines, from: { tree: from, stack: v1 }, to: { tree: to, stack: v2 }, apis: fakes.apis, settings,
    timeScale, jobs, seed, log, revoke: flags?.revoke ?? [],
    onStarted: async (cloud) => {
      writeLocalCloudFile({
        pid: process.pid, stackName: cloud.resources.stackName, region: LOCAL_REGION,
        environment: { ...engineEnvironment(engines as LocalEngines), AWS_ENDPOINT_URL_CLOUDWATCH: cloud.cloudWatchUrl },
        outputs: cloud.resources.outputs, startedAt: new Date().toISOString(),
      }, localFile);
      consoleEndpoint = await serveConsoleOf(cloud, engines as LocalEngines, registry.catalog, Number(flags?.['console-port'] ?? 0));
      log(`console: ${consoleEndpoint.url}  (the stack's dashboard, alarms, the deployment's timeline and dead letters, live while the rehearsal runs)`);
    },
    atEnd: async () => doctor(localFile),
  });
  await consoleEndpoint?.stop();
  rmSync(localFile, { force: true });
  log('');
  for (const line of formatReport(report, expect)) log(line);
  if (flags?.out) writeFileSync(flags.out, `${JSON.stringify(report, null, 2)}\n`);
  const accounted = Object.values(report.invariants.counts).every((count) => count === 0);
  const matched = report.outcome === (expect ?? 'promote');
  await cleanUp();
  process.exit(matched && accounted ? EXIT.ok : EXIT.unexpected);
} catch (error) {
  if (error instanceof RehearsalInputError) await fail(EXIT.badInput, error.message);
  if (error instanceof StackStartError) await fail(EXIT.cannotStart, error.message);
  await fail(EXIT.unexpected, `failed: ${(error as Error).stack ?? String(error)}`);
}

/**
 * `ballast doctor --env local` against the rehearsal's stack, as an operator would run it at the
 * end. Asynchronous: the engines and endpoints it queries are served by this very process.
 */
async function doctor(localFile: string): Promise<string[]> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [join(REPO, 'cli', 'bin', 'ballast.ts'), 'doctor', '--env', 'local', '--sample-seconds', '1', '--window', '60'], {
      encoding: 'utf8', env: { ...process.env, BALLAST_LOCAL_FILE: localFile }, timeout: 120_000,
    });
    return stdout.trimEnd().split('\n');
  } catch (error) {
    // Doctor exits non-zero on a failing check; its report is still what we want.
    const out = (error as { stdout?: string }).stdout;
    return out ? out.trimEnd().split('\n') : [`ballast doctor could not run: ${(error as Error).message}`];
  }
}
