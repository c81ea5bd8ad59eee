import { readdirSync, readFileSync } from 'node:fs';
import { ENGINE_OWNER_ENV } from './supervised-process.ts';

/** A process that carries an engine owner mark. */
export interface MarkedProcess {
  readonly pid: number;
  readonly command: string;
}

/**
 * Lists live processes started by `startSupervised` under the given owner mark, by reading
 * `/proc/<pid>/environ` (Linux). Used to prove a test run or `npm start` left nothing behind.
 */
export function processesMarkedBy(owner: string): MarkedProcess[] {
  const mark = `${ENGINE_OWNER_ENV}=${owner}`;
  const found: MarkedProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (!environ.includes(mark)) continue;
      const status = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/\) Z /.test(status)) continue; // a zombie is already dead; its parent just has not reaped it
      found.push({ pid: Number(entry), command: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() });
    } catch {
      // The process exited while we looked, or is not ours to read.
    }
  }
  return found;
}
