import { readFileSync } from 'node:fs';

/**
 * CPU seconds a process has used so far (user + system, every thread), from /proc (Linux): how a
 * bench splits the machine's time between its own process and the engines it started.
 */
export function pidCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // Fields 14 and 15 of stat(5), counted after the command name: utime and stime in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds this process has used so far, every thread (its worker-thread sandboxes among them). */
export function ownCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** The machine's CPU time so far, every core, from /proc/stat: busy and in all (seconds × cores). */
export function machineCpuTicks(): { readonly busy: number; readonly total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal guest guest_nice: idle and iowait are the
  // time not spent; guest time is already counted in user and nice, so it is left out.
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - (ticks[3] ?? 0) - (ticks[4] ?? 0), total };
}
