/**
 * The benches' CPU accounting from /proc: a process's own CPU read from outside agrees with what
 * Node reports of itself, and the machine's busy time grows with the work done.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { machineCpuTicks, ownCpuSeconds, pidCpuSeconds } from '../../local/engines/index.ts';

/** Spends `ms` of this thread's CPU (on a loaded machine that takes longer; 10 s at most). */
function burn(ms: number): void {
  const start = process.threadCpuUsage();
  const giveUpAt = performance.now() + 10_000;
  let x = 0;
  for (let spent = 0; spent < ms * 1000 && performance.now() < giveUpAt;) {
    for (let i = 0; i < 10_000; i += 1) x += Math.sqrt(x + i);
    const usage = process.threadCpuUsage(start);
    spent = usage.user + usage.system;
  }
  assert.ok(x > 0);
}

describe('CPU accounting', () => {
  it("reads this process's CPU from /proc as Node reports it, and counts the machine's busy time", () => {
    const before = { own: ownCpuSeconds(), proc: pidCpuSeconds(process.pid), machine: machineCpuTicks() };
    burn(300);
    const after = { own: ownCpuSeconds(), proc: pidCpuSeconds(process.pid), machine: machineCpuTicks() };
    const own = after.own - before.own;
    const proc = after.proc - before.proc;
    // /proc counts in clock ticks (10 ms), Node in microseconds: both saw the 300 ms of work.
    assert.ok(own >= 0.25 && proc >= 0.2, JSON.stringify({ own, proc }));
    assert.ok(Math.abs(own - proc) <= 0.1, JSON.stringify({ own, proc }));
    const busy = after.machine.busy - before.machine.busy;
    const total = after.machine.total - before.machine.total;
    // The machine's ticks are per core: 300 ms on one core is at least ~30 busy ticks, never more than all of them.
    assert.ok(busy >= 20 && busy <= total, JSON.stringify({ busy, total }));
  });
});
