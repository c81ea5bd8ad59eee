import type { RehearsalReport } from './run.ts';
import { formatAccess } from '../iam/authorizer.ts';

/** The rehearsal's report as printed: outcome and why, per version, every job, reads, cache, invariants. */
export function formatReport(report: RehearsalReport, expect: 'promote' | 'rollback' | undefined): string[] {
  const lines: string[] = [];
  const violations = Object.entries(report.invariants.counts).filter(([, count]) => count > 0);
  lines.push(`outcome: ${report.outcome === 'promote' ? 'PROMOTED' : 'ROLLED BACK'} (${report.update.status}) — ${report.reason}`);
  if (expect) lines.push(`expected: ${expect} → ${expect === report.outcome ? 'as expected' : 'NOT as expected'}`);
  lines.push('');
  lines.push('version  tree                   workerVersion        invocations  processed  duplicates  retried  dead-lettered  unreadable  p99 ms');
  for (const v of report.versions) {
    lines.push(`${v.version.padEnd(8)} ${v.tree.slice(0, 22).padEnd(22)} ${v.workerVersion.padEnd(20)} ${String(v.invocations).padStart(11)}  `
      + `${String(v.processed).padStart(9)}  ${String(v.duplicates).padStart(10)}  ${String(v.retried).padStart(7)}  ${String(v.deadLettered).padStart(13)}  `
      + `${String(v.unreadable).padStart(10)}  ${String(v.p99DurationMs ?? '-').padStart(6)}`);
  }
  lines.push('');
  const letters = Object.entries(report.jobs.deadLetters).map(([reason, count]) => `${reason} ${count}`).join(', ') || 'none';
  lines.push(`jobs: ${report.jobs.sent} messages for ${report.jobs.intents} intents (${report.jobs.byV2Producer} written by v2's producer), `
    + `${report.jobs.replayed} replayed after the update; left in the DLQ: ${letters}`);
  lines.push(`accounted for: ${violations.length === 0 ? 'every job — none lost, none applied twice, every dead letter where its content put it' : 'NO — see the violations below'}`);
  const reads = Object.entries(report.reads.byPhase)
    .map(([phase, bySchema]) => `${phase}: ${Object.entries(bySchema).map(([schema, count]) => `${schema} ${count}`).join(', ')}`).join(' · ') || 'none';
  lines.push(`reads by cache schema: ${reads}; failed ${report.reads.failed}`);
  lines.push(`cache entries differing from the table: ${Object.entries(report.staleCache).map(([tree, count]) => `${tree} ${count}`).join(', ') || '-'}`);
  lines.push(`invariants: ${Object.entries(report.invariants.counts).map(([name, count]) => `${name} ${count}`).join(' · ')}`);
  for (const [name, count] of violations) {
    lines.push(`  VIOLATED ${name} (${count}): ${report.invariants.descriptions[name] ?? ''}; e.g. ${(report.invariants.examples[name] ?? []).slice(0, 3).join(', ')}`);
  }
  lines.push(formatAccess(report.access));
  if (report.update.notApplied.length > 0) lines.push(`not applied locally: ${report.update.notApplied.join('; ')}`);
  if (report.doctor.length > 0) lines.push('', 'at the end (the traffic\'s poison and business refusals are in the DLQ on purpose):', ...report.doctor);
  for (const warning of report.warnings) lines.push(`warning: ${warning}`);
  lines.push(`took ${report.seconds} s`);
  return lines;
}
