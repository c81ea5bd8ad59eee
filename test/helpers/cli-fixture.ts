/**
 * Shared setup of the CLI integration tests (not a test file itself): real engines, a real local
 * cloud (started per test where a test needs a fresh one), its CloudWatch-compatible metrics
 * endpoint, a local-cloud description file the CLI discovers, and `cli()` running `ballast` in-process.
 */
import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { engineEnvironment, LOCAL_REGION } from '../../local/engines/index.ts';
import { startLocalCloud, type LocalCloud } from '../../local/cloud/index.ts';
import { serveCloudWatch, type CloudWatchEndpoint } from '../../local/cloud/cloudwatch-endpoint.ts';
import { startPartnerApi, type PartnerApi } from '../../workloads/accounts/local/partner-api.ts';
import { writeLocalCloudFile } from '../../shared/discovery/index.ts';
import { TRACES_URL_VARIABLE } from '../../shared/operations/traces.ts';
import { runCli, type CliDependencies } from '../../cli/program.ts';
import { useEngines } from './engines.ts';
import { waitFor } from './wait.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunningCloud {
  readonly cloud: LocalCloud;
  readonly outputs: Readonly<Record<'JobsQueueUrl' | 'JobsDeadLetterQueueUrl' | 'StateTableName' | 'ControlTableName' | 'ReadApiUrl', string>>;
  /** Stops the worker and the other functions; the engines (and the queues' contents) stay. */
  stopFunctions(): Promise<void>;
}

/** {@link waitFor} with the patience a whole local cloud needs (30 s, polled every 200 ms). */
export const eventually = (what: string, condition: () => Promise<boolean>, timeoutMs = 30_000) => waitFor(what, condition, timeoutMs, 200);

export function useCliFixture() {
  const dir = mkdtempSync(join(tmpdir(), 'ballast-cli-'));
  const file = join(dir, 'local.json');
  process.env.BALLAST_LOCAL_FILE = file;
  let partner: PartnerApi | undefined;
  const clouds: LocalCloud[] = [];
  const endpoints: CloudWatchEndpoint[] = [];
  before(async () => void (partner = await startPartnerApi()));
  after(async () => {
    await Promise.all(clouds.map((cloud) => cloud.stop({ graceMs: 1_000 })));
    await Promise.all(endpoints.map((endpoint) => endpoint.stop()));
    await partner?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  // Registered after the hook above, so the engines stop only once the clouds have.
  const local = useEngines();

  /** Describes a stack for the CLI, as `npm start` does. */
  function publish(outputs: Record<string, string>, extraEnvironment: Record<string, string> = {}): void {
    writeLocalCloudFile({
      pid: process.pid, stackName: 'ballast-local', region: LOCAL_REGION,
      environment: { ...engineEnvironment(local.engines), ...extraEnvironment }, outputs, startedAt: new Date().toISOString(),
    }, file);
  }

  return {
    local,
    publish,
    /** A fresh local cloud with its metrics endpoint, published for the CLI. */
    async startCloud(): Promise<RunningCloud> {
      const cloud = await startLocalCloud({ engines: local.engines, context: { PARTNER_API_URL: partner?.url } });
      clouds.push(cloud);
      const cloudwatch = await serveCloudWatch(cloud.metrics);
      endpoints.push(cloudwatch);
      const outputs = cloud.resources.outputs as RunningCloud['outputs'] & Record<string, string>;
      publish(outputs, { AWS_ENDPOINT_URL_CLOUDWATCH: cloudwatch.url, [TRACES_URL_VARIABLE]: cloud.tracesUrl });
      return { cloud, outputs, stopFunctions: () => cloud.stop({ graceMs: 2_000 }) };
    },
    /** Runs `ballast <args>` in this process. */
    async cli(args: readonly string[], options: { stdin?: string; clients?: CliDependencies['clients'] } = {}): Promise<CliRun> {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let out = '';
      let err = '';
      stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
      stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
      const code = await runCli(args, { io: { stdin: Readable.from([options.stdin ?? '']), stdout, stderr }, clients: options.clients });
      return { code, stdout: out, stderr: err };
    },
  };
}
