import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { VALIDATION_REPORT_FILE } from 'aws-cdk-lib/cx-api';
import { BallastStack } from '../../infra/ballast-stack.ts';
import { environmentConfig, type EnvironmentConfig } from '../../infra/config.ts';
import { addNagChecks, suppressReviewedFindings } from '../../infra/nag-suppressions.ts';
import { fileURLToPath } from 'node:url';
import { codeVersion } from '../../infra/code-version.ts';
import { frameworkModule, writeFunctionEntry } from '../../infra/constructs/function-entry.ts';
import { workloadSettings } from '../../shared/workloads/index.ts';
import { registry, WORKLOADS } from '../fixtures/workloads/registry.ts';

/** The account and region every test stack is synthesized for (no lookups, stable ARNs). */
export const TEST_ENV = { account: '123456789012', region: 'eu-west-1' } as const;

export interface BallastAppOptions {
  /** Changes the environment's config, e.g. to provoke a refusal. @default - unchanged */
  readonly adjust?: (config: EnvironmentConfig) => EnvironmentConfig;
  /** Register the cdk-nag pack the way the app (`workloads/app.ts`) does. @default false */
  readonly nag?: boolean;
  /** Acknowledge the reviewed findings, as the CLI app does. @default true */
  readonly acknowledgeReviewed?: boolean;
  /** Cloud assembly directory. @default - a fresh temporary directory */
  readonly outdir?: string;
}

/** A value for every registered workload setting, as `-c` would give: `PARTNER_API_URL` → `https://partner.example.com`. */
export const TEST_SETTINGS: Readonly<Record<string, string>> = Object.fromEntries(
  workloadSettings(WORKLOADS).map((name) => [name, `https://${name.toLowerCase().replace(/(_api)?_url$/, '').replaceAll('_', '-')}.example.com`]),
);

/**
 * Builds the app the CLI builds for `env` (stack, reviewed acknowledgments, optionally cdk-nag),
 * with Lambda bundling skipped so asset hashes stay stable and the suite stays fast.
 */
export function ballastApp(env: string, options: BallastAppOptions = {}) {
  const app = new App({ outdir: options.outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  const config = (options.adjust ?? ((c) => c))(environmentConfig(env, { settings: env === 'local' ? {} : TEST_SETTINGS }));
  const stack = new BallastStack(app, `ballast-${env}`, { config, registry, workerVersion: 'test', env: TEST_ENV });
  if (options.acknowledgeReviewed ?? true) suppressReviewedFindings(stack);
  if (options.nag) addNagChecks(app);
  return { app, stack };
}

/**
 * Synthesizes the ballast stack for `env` with Lambda bundling skipped (asset hashes stay stable
 * and the suite stays fast); `adjust` may change the config to provoke a refusal.
 */
export function synthStack(env: string, adjust: (config: EnvironmentConfig) => EnvironmentConfig = (c) => c) {
  const { app, stack } = ballastApp(env, { adjust });
  return { app, stack, template: Template.fromStack(stack) };
}

/** The parts of CDK's `validation-report.json` the nag tests read. */
export interface ValidationReport {
  readonly pluginReports: ReadonlyArray<{
    readonly pluginName: string;
    readonly conclusion: 'success' | 'failure';
    readonly metadata?: { readonly error?: string };
    readonly violations: readonly Violation[];
    readonly suppressedViolations?: ReadonlyArray<Violation & {
      readonly acknowledgedId: string;
      readonly acknowledgedAt?: string;
      readonly reason?: string;
    }>;
  }>;
}
interface Violation {
  readonly ruleName: string;
  readonly severity: string;
  readonly violatingConstructs: ReadonlyArray<{ readonly constructPath: string }>;
}

/**
 * Synthesizes the app for `env` with cdk-nag on, as `cdk synth` does, and returns CDK's
 * validation report plus the error synth threw (an unacknowledged nag error makes an in-process
 * app throw; warnings do not), so a test can list every finding either way.
 */
export function nagReport(env: string, options: Omit<BallastAppOptions, 'nag' | 'outdir'> = {}) {
  const outdir = mkdtempSync(join(tmpdir(), 'ballast-nag-'));
  try {
    const { app, stack } = ballastApp(env, { ...options, nag: true, outdir });
    let synthError: unknown;
    try {
      app.synth();
    } catch (error) {
      synthError = error;
    }
    let report: ValidationReport;
    try {
      report = JSON.parse(readFileSync(join(outdir, VALIDATION_REPORT_FILE), 'utf8')) as ValidationReport;
    } catch {
      throw synthError ?? new Error(`synth wrote no ${VALIDATION_REPORT_FILE}: is the nag plugin registered?`);
    }
    return { app, stack, report, synthError };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** This repository: the project the test stacks bundle from. */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));

const FACTORIES: Readonly<Record<string, string>> = { 'cache-invalidator': 'invalidatorHandler', 'invalidation-repair': 'repairHandler', 'read-api': 'readApiHandler' };

/**
 * The code version a stack over the example registry stamps on one of its functions: of its own
 * entry (the deployment hooks) or of the entry generated for the registry (the cache functions).
 */
export function functionVersion(name: string): string {
  const module = frameworkModule(`functions/${name}/index`);
  const factory = FACTORIES[name];
  return codeVersion(factory ? writeFunctionEntry(REPO, { name, module, factory, registry: registry.module }) : module, REPO);
}
