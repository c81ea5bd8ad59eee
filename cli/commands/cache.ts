import { Command } from 'commander';
import { cacheTarget, checkCache } from '../../shared/operations/cache.ts';
import { EXIT } from '../errors.ts';
import { line, printJson } from '../io.ts';
import { positiveInteger, withContext, type CommandEnvironment } from './shared.ts';

export function cacheCommand(env: CommandEnvironment): Command {
  const cache = new Command('cache').description('the account cache');
  cache.addCommand(new Command('check')
    .description('sampled mismatch rate between cache and state table; --repair fixes what differs')
    .option('--sample <n>', 'entries to compare', positiveInteger('--sample'), 100)
    .option('--repair', 'evict stale entries and refill them from the table', false)
    .option('--json', 'print JSON', false)
    .action(async (flags: { sample: number; repair: boolean; json: boolean }, command: Command) => withContext(command, env, async (context) => {
      const report = await checkCache({
        ...await cacheTarget(context), documents: context.clients.documents,
        stateTableName: context.stack.outputs.StateTableName, sample: flags.sample, repair: flags.repair,
      });
      if (flags.json) printJson(env.io, report);
      else {
        line(env.io.stdout, `sampled ${report.sampled}, mismatched ${report.mismatches} (${(report.mismatchRate * 100).toFixed(1)}%), repaired ${report.repaired}`);
        for (const d of report.details) line(env.io.stdout, `  ${d.accountId}: cached v${d.cachedVersion ?? '-'} table v${d.tableVersion ?? '-'}${d.repaired ? ' (repaired)' : ''}`);
      }
      env.setExit(report.mismatches > report.repaired ? EXIT.unhealthy : EXIT.ok);
    })));
  return cache;
}
