import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isRunning } from '../../local/engines/index.ts';

/** Runs a TypeScript file with this Node (the pinned Node 24) as a child process. */
export function runNode(file: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [file, ...args], { env: { ...process.env, ...env }, stdio: 'pipe' });
}

/** Resolves with all stdout once `pattern` has appeared in it, or rejects after `timeoutMs`. */
export function waitForOutput(child: ChildProcessWithoutNullStreams, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => done(new Error(`no ${pattern} within ${timeoutMs} ms.\nstdout:\n${stdout}\nstderr:\n${stderr}`)), timeoutMs);
    const onOut = (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      if (pattern.test(stdout)) done();
    };
    const onErr = (chunk: Buffer) => void (stderr += chunk.toString('utf8'));
    const onExit = (code: number | null) => done(new Error(`exited with ${code} before ${pattern}.\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    function done(error?: Error) {
      clearTimeout(timer);
      child.stdout.off('data', onOut);
      child.stderr.off('data', onErr);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(stdout);
    }
    child.stdout.on('data', onOut);
    child.stderr.on('data', onErr);
    child.once('exit', onExit);
  });
}

/** Resolves with the exit code (or signal name) of a child, rejecting after `timeoutMs`. */
export function exitOf(child: ChildProcessWithoutNullStreams, timeoutMs: number): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? 'unknown');
    });
  });
}

/** Waits (bounded) until none of `pids` is running; returns the ones still alive. */
export async function survivors(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = pids.filter(isRunning);
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    alive = alive.filter(isRunning);
  }
  return alive;
}
