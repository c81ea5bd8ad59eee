/** The operator CLI as a library: `runCli`; the operations it is made of live in shared/operations. */
export { runCli, type CliDependencies } from './program.ts';
export { EXIT, CliError, UsageError, type ExitCode } from './errors.ts';
export * from '../shared/operations/index.ts';
