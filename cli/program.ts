import { Command, CommanderError } from 'commander';
import { ProducerError } from '../shared/producer/index.ts';
import { StackUnreachableError } from '../shared/operations/errors.ts';
import type { ClientOverrides } from '../shared/operations/context.ts';
import type { Registry } from '../shared/workloads/index.ts';
import { CliError, EXIT, type ExitCode } from './errors.ts';
import { line, processIo, type CliIo } from './io.ts';
import { cacheCommand } from './commands/cache.ts';
import { devCommand } from './commands/dev.ts';
import { dlqCommand } from './commands/dlq.ts';
import { doctorCommand } from './commands/doctor.ts';
import { sendCommand } from './commands/send.ts';
import { statusCommand } from './commands/status.ts';
import { traceCommand } from './commands/trace.ts';

const EXIT_HELP = `
Exit codes:
  0  ok: done; for read commands, healthy / nothing wrong found
  1  done, but something is wrong: a doctor check failed, jobs failed to send or replay, DLQ not empty (status)
  2  bad input or usage: invalid job lines (nothing sent unless --skip-invalid), unknown flags
  3  cannot reach the stack: no local cloud, stack not deployed, no credentials, endpoint down

The stack is found by --env: 'local' reads .ballast/local.json (written by 'npm start'; BALLAST_LOCAL_FILE
overrides), any other env reads the CloudFormation outputs of --stack (default 'ballast-<env>') with the AWS SDK's normal
credential, region and endpoint resolution.`;

export interface CliDependencies {
  /** @default - the process's stdin/stdout/stderr */
  readonly io?: CliIo;
  /** Clients to use instead of new ones (tests, embedders). @default {} */
  readonly clients?: ClientOverrides;
  /** The app's workloads. @default - loaded from `--registry`, `BALLAST_REGISTRY` or the running local cloud */
  readonly registry?: Registry;
}

/**
 * Runs `ballast <args>` and resolves with its exit code; never calls `process.exit`.
 * @example
 * const code = await runCli(['status', '--env', 'dev', '--json']);
 */
export async function runCli(args: readonly string[], deps: CliDependencies = {}): Promise<ExitCode> {
  const io = deps.io ?? processIo();
  let exitCode: ExitCode = EXIT.ok;
  const env = { io, clients: deps.clients ?? {}, registry: deps.registry, setExit: (code: ExitCode) => void (exitCode = code) };
  const program = new Command('ballast')
    .description('run a ballast app locally (dev) and operate a ballast stack: send jobs, inspect and replay the DLQ, status, doctor, cache check, trace a job')
    .option('--env <env>', "environment: 'local' or a deployed env (dev, staging, prod)", process.env.BALLAST_ENV ?? 'local')
    .option('--stack <name>', 'the deployed stack (default: ballast-<env>)', process.env.BALLAST_STACK)
    .option('--registry <module>', "the app's registry module (exports `registry`); default: $BALLAST_REGISTRY, else the running local cloud's", process.env.BALLAST_REGISTRY)
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) })
    .exitOverride();
  for (const command of [devCommand(env), sendCommand(env), dlqCommand(env), statusCommand(env), doctorCommand(env), cacheCommand(env), traceCommand(env)]) {
    program.addCommand(command.exitOverride().configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) }));
    for (const sub of command.commands) sub.exitOverride().configureOutput({ writeOut: (s) => void io.stdout.write(s), writeErr: (s) => void io.stderr.write(s) });
  }
  try {
    await program.parseAsync([...args], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code)) return EXIT.ok;
      return EXIT.usage;
    }
    if (error instanceof CliError) {
      line(io.stderr, `ballast: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof StackUnreachableError) {
      line(io.stderr, `ballast: ${error.message}`);
      return EXIT.unreachable;
    }
    if (error instanceof ProducerError) {
      line(io.stderr, `ballast: ${error.message}`);
      return EXIT.usage;
    }
    line(io.stderr, `ballast: unexpected error: ${(error as Error).stack ?? String(error)}`);
    return EXIT.unhealthy;
  }
}
