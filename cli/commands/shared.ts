import type { Command } from 'commander';
import { closeContext, createContext, type ClientOverrides, type OpsContext } from '../../shared/operations/context.ts';
import { resolveStack } from '../../shared/operations/discovery.ts';
import { readLocalCloudFile } from '../../shared/discovery/index.ts';
import type { Registry } from '../../shared/workloads/index.ts';
import { loadRegistry } from '../../shared/workloads/load.ts';
import { UsageError, type ExitCode } from '../errors.ts';
import { parseDurationMs, type CliIo } from '../io.ts';

/** What every command gets from the program. */
export interface CommandEnvironment {
  readonly io: CliIo;
  readonly clients: ClientOverrides;
  /** Records the run's exit code (the last one set wins). */
  setExit(code: ExitCode): void;
  /** The app's workloads, given by an embedder or a test. @default - loaded: see {@link registryOf} */
  readonly registry?: Registry;
}

/**
 * The app's workloads (their job types, reasons, cached entities): the embedder's, else the
 * module `--registry` (or `BALLAST_REGISTRY`) names, else the one the running local cloud
 * recorded (with `--env local`); refused with what to pass otherwise.
 */
export async function registryOf(command: Command, env: CommandEnvironment): Promise<Registry> {
  if (env.registry) return env.registry;
  const { registry, env: name } = command.optsWithGlobals<{ registry?: string; env: string }>();
  let module = registry;
  if (!module && name === 'local') {
    try {
      module = readLocalCloudFile().registry;
    } catch {
      module = undefined;
    }
  }
  if (!module) throw new UsageError('which workloads? pass --registry <module exporting `registry`> (or set BALLAST_REGISTRY); with --env local, a running `ballast dev` is found by itself');
  try {
    return await loadRegistry(module);
  } catch (error) {
    throw new UsageError(`--registry: ${(error as Error).message}`);
  }
}

/** Resolves `--env`, creates the clients, runs `body`, closes what it created. */
export async function withContext<T>(command: Command, env: CommandEnvironment, body: (context: OpsContext) => Promise<T>): Promise<T> {
  const { env: name, stack: stackName } = command.optsWithGlobals<{ env: string; stack?: string }>();
  const stack = await resolveStack({ env: name, stackName });
  const context = createContext(stack, env.clients);
  try {
    return await body(context);
  } finally {
    closeContext(context, env.clients);
  }
}

export function positiveInteger(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`${name} must be an integer >= 1, got '${value}'`);
    return n;
  };
}

export function nonNegativeNumber(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`${name} must be a number >= 0, got '${value}'`);
    return n;
  };
}

export function duration(name: string) {
  return (value: string): number => {
    try {
      return parseDurationMs(value);
    } catch (error) {
      throw new UsageError(`${name}: ${(error as Error).message}`);
    }
  };
}

/** Collects a repeatable (or comma-separated) option. */
export function list(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((v) => v.trim()).filter(Boolean)];
}
