import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';

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
  /** The registry module its `BallastStack` was built from (`ballast:registry` metadata), if it has one. */
  readonly registry?: string;
}

export interface SynthesizeOptions {
  /**
   * The CDK app entry file, run by this Node as the CDK CLI runs an app (`CDK_OUTDIR`,
   * `CDK_CONTEXT_JSON`), from {@link appDir}.
   * @default - the `app` command of `appDir`'s `cdk.json`
   */
  readonly appFile?: string;
  /** The CDK project: where its `cdk.json` is and the app runs. @default process.cwd() */
  readonly appDir?: string;
  /** @default { env: 'local' } */
  readonly context?: Record<string, unknown>;
  /** @default - a fresh temporary directory */
  readonly outdir?: string;
}

/**
 * How to run a CDK project's app, from its `cdk.json` `app`: a Node app (`node …`, `npx … node …`,
 * or a bare `.ts`/`.js` file) runs on this Node with its flags; anything else through the shell.
 */
export function cdkAppCommand(appDir: string): { readonly command: string; readonly args: readonly string[]; readonly shell: boolean } {
  const file = join(appDir, 'cdk.json');
  let app: unknown;
  try {
    app = (JSON.parse(readFileSync(file, 'utf8')) as { app?: unknown }).app;
  } catch (error) {
    throw new Error(`no CDK app: ${file} is missing or not JSON (${(error as Error).message}); run from your CDK project or pass its directory`);
  }
  if (typeof app !== 'string' || app.trim() === '') throw new Error(`${file} has no "app" command`);
  const words = app.trim().split(/\s+/);
  const node = words.indexOf('node');
  const nodeArgs = node >= 0 && words.slice(0, node).every((word) => word === 'npx' || word.startsWith('-')) ? words.slice(node + 1)
    : words.length === 1 && /\.(ts|mts|js|mjs)$/.test(app.trim()) ? words : undefined;
  return nodeArgs ? { command: process.execPath, args: nodeArgs, shell: false } : { command: app, args: [], shell: true };
}

/**
 * Synthesizes the CDK app exactly as `cdk synth -c env=local` would (same entry, same bundling by
 * the local esbuild) and returns its stacks. The local cloud is built from this and nothing else,
 * so what runs locally is what `cdk deploy` ships.
 */
export async function synthesize(options: SynthesizeOptions = {}): Promise<SynthesizedStack[]> {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), 'ballast-assembly-'));
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const appDir = resolvePath(options.appDir ?? process.cwd());
    const app = options.appFile ? { command: process.execPath, args: [options.appFile], shell: false } : cdkAppCommand(appDir);
    const child = spawn(app.command, [...app.args], {
      cwd: appDir,
      shell: app.shell,
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
    artifacts: Record<string, {
      type: string; properties?: { templateFile?: string }; metadata?: StackMetadata; additionalMetadataFile?: string;
    }>;
  };
  return Object.entries(manifest.artifacts)
    .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack' && artifact.properties?.templateFile)
    .map(([stackName, artifact]) => ({
      stackName,
      assemblyDir: outdir,
      // Newer CDK versions write a stack's construct metadata to a file of its own.
      ...registryOf([
        ...Object.values(artifact.metadata ?? {}),
        ...Object.values(artifact.additionalMetadataFile ? JSON.parse(readFileSync(join(outdir, artifact.additionalMetadataFile), 'utf8')) as StackMetadata : {}),
      ].flat()),
      template: JSON.parse(readFileSync(join(outdir, artifact.properties?.templateFile as string), 'utf8')) as Template,
    }));
}

/** Construct metadata by construct path. */
type StackMetadata = Record<string, readonly { type: string; data?: unknown }[]>;

/** The registry module a `BallastStack` recorded in its manifest metadata (see `REGISTRY_METADATA`). */
function registryOf(metadata: readonly { type: string; data?: unknown }[]): { registry?: string } {
  const entry = metadata.find((item) => item.type === 'ballast:registry');
  return typeof entry?.data === 'string' ? { registry: entry.data } : {};
}
