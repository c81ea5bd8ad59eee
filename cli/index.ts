/** The operator CLI as a library: `runCli`, and the operations it is made of. */
export { runCli, type CliDependencies } from './program.ts';
export { EXIT, CliError, StackUnreachableError, UsageError, type ExitCode } from './errors.ts';
export { resolveStack, type StackTarget } from './discovery.ts';
export { createContext, closeContext, type OpsContext } from './context.ts';
export { runDoctor, type DoctorReport } from './ops/doctor/index.ts';
export { gatherStatus, type StackStatus } from './ops/status.ts';
export { listDeadLetters, redriveAll, replayDeadLetters } from './ops/dlq.ts';
export { checkCache } from './ops/cache.ts';
