import { Command } from 'commander';
import { cacheTarget, checkCache } from '../../shared/operations/cache.ts';
import { workloadEntities } from '../../shared/workloads/index.ts';
import { EXIT, UsageError } from '../errors.ts';
import { line, printJson } from '../io.ts';
import { positiveInteger, registryOf, withContext, type CommandEnvironment } from './shared.ts';

export function cacheCommand(env: CommandEnvironment): Command {
  const cache = new Command('cache').description('the entity cache of the registry\'s cached entities');
  cache.addCommand(new Command('check')
    .description('sampled mismatch rate between cache and state table, per cached entity; --repair fixes what differs')
    .option('--entity <name>', 'sample one cached entity only')
    .option('--sample <n>', 'entries to compare per entity', positiveInteger('--sample'), 100)
    .option('--repair', 'evict stale entries and refill them from the table', false)
    .option('--json', 'print JSON', false)
    .action(async (flags: { entity?: string; sample: number; repair: boolean; json: boolean }, command: Command) => {
      const entities = workloadEntities((await registryOf(command, env)).workloads);
      const names = entities.map((entity) => entity.name);
      if (flags.entity !== undefined && !names.includes(flags.entity)) {
        throw new UsageError(`--entity: no cached entity '${flags.entity}'; the registered ones are ${names.join(', ')}`);
      }
      return withContext(command, env, async (context) => {
        const report = await checkCache({
          ...await cacheTarget(context), documents: context.clients.documents, stateTableName: context.stack.outputs.StateTableName,
          entities, entity: flags.entity, sample: flags.sample, repair: flags.repair,
        });
        if (flags.json) printJson(env.io, report);
        else {
          line(env.io.stdout, `sampled ${report.sampled}, mismatched ${report.mismatches} (${(report.mismatchRate * 100).toFixed(1)}%), repaired ${report.repaired}`);
          for (const d of report.details) line(env.io.stdout, `  ${d.entity} ${d.id}: cached v${d.cachedVersion ?? '-'} table v${d.tableVersion ?? '-'}${d.repaired ? ' (repaired)' : ''}`);
        }
        env.setExit(report.mismatches > report.repaired ? EXIT.unhealthy : EXIT.ok);
      });
    }));
  return cache;
}
