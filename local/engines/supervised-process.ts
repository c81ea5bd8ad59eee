import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

/**
 * A child process that cannot outlive the Node process that started it.
 *
 * The engine runs under a tiny `sh` watchdog whose stdin is a pipe from us. When we stop it, or
 * when this process dies in any way (including SIGKILL, where no handler runs), the pipe closes
 * and the watchdog terminates the engine. The watchdog gets its own process group so that a
 * Ctrl-C in the terminal reaches only us: we decide the shutdown order (drain first, engines last).
 */
export interface SupervisedProcess {
  /** Process id of the engine itself (not the watchdog). */
  readonly pid: number;
  /** Resolves with the exit code once the engine has exited. */
  readonly exited: Promise<number | null>;
  /** Last lines the engine wrote, for error messages when it fails to start. */
  output(): string;
  /** Terminates the engine (SIGTERM, then SIGKILL after `graceMs`) and waits for it. */
  stop(graceMs?: number): Promise<void>;
}

// $1.. is the engine command line. fd 3 keeps the pipe for the watcher: a background job's stdin
// would otherwise be /dev/null in a non-interactive shell.
const WATCHDOG = [
  'exec 3<&0',
  '"$@" </dev/null 3<&- &',
  'engine=$!',
  'echo "ballast-engine-pid $engine" >&2',
  '{ cat <&3 >/dev/null; kill -TERM "$engine" 2>/dev/null; } &',
  'wait "$engine"',
].join('\n');

const OUTPUT_LINES_KEPT = 40;

/** Marks every engine process so a test run can find leftovers by environment. */
export const ENGINE_OWNER_ENV = 'BALLAST_ENGINE_OWNER';

/** Throws with an install hint when `command` is not on the PATH. */
export function requireCommand(command: string, installHint: string): void {
  const found = spawnSync('/bin/sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  if (found.status !== 0) {
    throw new Error(`'${command}' was not found on the PATH. ${installHint}`);
  }
}

const PID_TIMEOUT_MS = 10_000;

/** Starts `command args...` under the watchdog and resolves once its pid is known. */
export async function startSupervised(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<SupervisedProcess> {
  const child: ChildProcess = spawn('/bin/sh', ['-c', WATCHDOG, 'ballast-engine', command, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env, [ENGINE_OWNER_ENV]: process.env[ENGINE_OWNER_ENV] ?? String(process.pid) },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line);
      if (lines.length > OUTPUT_LINES_KEPT) lines.shift();
    }
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // Don't let the watchdog's pipes keep our event loop alive on their own.
  child.unref();
  (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // The pipes are unref'd, so this timer is what keeps a script that only awaits an engine
  // alive until the watchdog reports (without it Node could exit mid-start, the await unsettled).
  let pidTimer: NodeJS.Timeout | undefined;
  const pid = await new Promise<number>((resolve, reject) => {
    pidTimer = setTimeout(() => reject(new Error(`${command}: the watchdog did not report its pid within ${PID_TIMEOUT_MS} ms`)), PID_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      const match = /ballast-engine-pid (\d+)/.exec(chunk.toString('utf8'));
      if (match?.[1]) {
        child.stderr?.off('data', onData);
        resolve(Number(match[1]));
      }
    };
    child.stderr?.on('data', onData);
    child.once('error', reject);
    void exited.then((code) => reject(new Error(`${command} exited (code ${code}) before starting`)));
  }).finally(() => clearTimeout(pidTimer));

  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 5_000): Promise<void> => {
    stopping ??= (async () => {
      child.stdin?.end();
      signalGroup(child.pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      await waitUntilGone(pid, graceMs);
    })();
    return stopping;
  };

  return { pid, exited, output: () => lines.join('\n'), stop };
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** True while a process with this pid exists (zombies excluded). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' });
  return !stat.stdout.trim().startsWith('Z');
}

async function waitUntilGone(pid: number, timeoutMs: number): Promise<void> {
  const killAtMs = Date.now() + timeoutMs;
  const giveUpAtMs = killAtMs + 5_000;
  while (isRunning(pid)) {
    if (Date.now() > giveUpAtMs) throw new Error(`process ${pid} survived SIGKILL for 5 s`);
    if (Date.now() > killAtMs) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        return;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
