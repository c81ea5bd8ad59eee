import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A CloudFormation template as synthesized. */
export interface Template {
  readonly Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown>; UpdatePolicy?: Record<string, unknown> }>;
  readonly Outputs?: Record<string, { Value: unknown }>;
}

/** One synthesized stack: its template and where its assets were written. */
export interface SynthesizedStack {
  readonly stackName: string;
  readonly template: Template;
  /** The assembly directory; `aws:asset:path` metadata is relative to it. */
  readonly assemblyDir: string;
}

export interface SynthesizeOptions {
  /**
   * The CDK app entry, run as the CDK CLI runs it (`CDK_OUTDIR`, `CDK_CONTEXT_JSON`).
   * @default - infra/bin/ballast.ts of this repository
   */
  readonly appFile?: string;
  /** @default { env: 'local' } */
  readonly context?: Record<string, unknown>;
  /** @default - a fresh temporary directory */
  readonly outdir?: string;
}

const DEFAULT_APP = fileURLToPath(new URL('../../infra/bin/ballast.ts', import.meta.url));

/**
 * Synthesizes the CDK app exactly as `cdk synth -c env=local` would (same entry, same bundling by
 * the local esbuild) and returns its stacks. The local cloud is built from this and nothing else,
 * so what runs locally is what `cdk deploy` ships.
 */
export async function synthesize(options: SynthesizeOptions = {}): Promise<SynthesizedStack[]> {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), 'ballast-assembly-'));
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [options.appFile ?? DEFAULT_APP], {
      env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({
        // What the CDK CLI passes too: asset metadata is how a function finds its bundle.
        'aws:cdk:enable-asset-metadata': true,
        'aws:cdk:enable-path-metadata': true,
        ...(options.context ?? { env: 'local' }),
      }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) {
    throw new Error(`synthesizing the CDK app failed (exit ${code}); fix what it reports, as \`cdk deploy\` would refuse it too:\n${output.join('').slice(-4_000)}`);
  }
  const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; properties?: { templateFile?: string } }>;
  };
  return Object.entries(manifest.artifacts)
    .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack' && artifact.properties?.templateFile)
    .map(([stackName, artifact]) => ({
      stackName,
      assemblyDir: outdir,
      template: JSON.parse(readFileSync(join(outdir, artifact.properties?.templateFile as string), 'utf8')) as Template,
    }));
}
