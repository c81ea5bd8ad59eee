/** Exit codes scripts can rely on (also listed by `ballast --help`). */
export const EXIT = {
  /** Done; for read commands: healthy / nothing wrong found. */
  ok: 0,
  /** Done, but something is wrong: a check failed, some jobs were not sent or replayed. */
  unhealthy: 1,
  /** Bad input or usage: nothing (or, with --skip-invalid, nothing of the bad lines) was done. */
  usage: 2,
  /** The stack cannot be reached: not deployed, no local cloud, no credentials, endpoint down. */
  unreachable: 3,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one line and turns into its exit code. */
export class CliError extends Error {
  readonly exitCode: ExitCode;

  constructor(exitCode: ExitCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.exitCode = exitCode;
  }
}

/** Wrong flags or input. */
export class UsageError extends CliError {
  constructor(message: string, options?: ErrorOptions) {
    super(EXIT.usage, message, options);
  }
}
