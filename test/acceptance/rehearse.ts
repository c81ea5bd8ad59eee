/**
 * Runs `npm run rehearse` as a user would, with v2 = this checkout plus fixture patches (applied to
 * a copy with `git apply`), and reads back its JSON report.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { treeCopy } from '../../local/rehearse/tree.ts';
import type { RehearsalReport } from '../../local/rehearse/run.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

export interface RehearsalRun {
  readonly code: number | null;
  readonly output: string;
  readonly report: RehearsalReport | undefined;
}

/** `npm run rehearse -- --from HEAD --to-dir <this checkout + fixtures> ...args`; bounded by `timeoutMs`. */
export async function rehearseWith(fixtures: readonly string[], args: readonly string[], timeoutMs = 280_000): Promise<RehearsalRun> {
  const tree = treeCopy(REPO, `fixtures ${fixtures.join(' + ') || '(none)'}`);
  const out = join(mkdtempSync(join(tmpdir(), 'ballast-rehearsal-test-')), 'report.json');
  try {
    if (fixtures.length > 0) execFileSync('git', ['apply', ...fixtures.map((name) => join(FIXTURES, `${name}.patch`))], { cwd: tree.dir, stdio: 'pipe' });
    return await new Promise<RehearsalRun>((resolve) => {
      execFile(process.execPath, [join(REPO, 'local', 'rehearse', 'main.ts'), '--from', 'HEAD', '--to-dir', tree.dir, '--out', out, ...args], {
        cwd: REPO, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGTERM',
      }, (error, stdout, stderr) => {
        let report: RehearsalReport | undefined;
        try {
          report = JSON.parse(readFileSync(out, 'utf8')) as RehearsalReport;
        } catch {
          report = undefined;
        }
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}`, report });
      });
    });
  } finally {
    tree.remove();
    rmSync(join(out, '..'), { recursive: true, force: true });
  }
}

/** Every invariant that was violated, with its count (empty when every job is accounted for). */
export function violations(report: RehearsalReport): Record<string, number> {
  return Object.fromEntries(Object.entries(report.invariants.counts).filter(([, count]) => count > 0));
}

/** What a failed assertion should show: the rehearsal's events and report, without the doctor's long tail. */
export function explain(run: RehearsalRun): string {
  const cut = run.output.indexOf('\nat the end (');
  return (cut === -1 ? run.output : run.output.slice(0, cut)).slice(-4_000);
}
