import { Command } from 'commander';
import { runDoctor } from '../../shared/operations/doctor/index.ts';
import { workloadEntities, workloadReasons } from '../../shared/workloads/index.ts';
import { EXIT } from '../errors.ts';
import { line, printJson } from '../io.ts';
import { nonNegativeNumber, positiveInteger, registryOf, withContext, type CommandEnvironment } from './shared.ts';

const MARK = { ok: 'OK  ', warn: 'WARN', fail: 'FAIL', unknown: '??  ' } as const;

export function doctorCommand(env: CommandEnvironment): Command {
  return new Command('doctor')
    .description('run the incident checklist: a verdict per check with its evidence and the next step')
    .option('--sample-seconds <s>', 'seconds between the two queue samples', nonNegativeNumber('--sample-seconds'), 5)
    .option('--window <minutes>', 'metrics window', positiveInteger('--window'), 15)
    .option('--max-age-seconds <s>', 'oldest-message age that counts as stuck', positiveInteger('--max-age-seconds'), 300)
    .option('--cache-sample <n>', 'cache entries compared with the table', positiveInteger('--cache-sample'), 50)
    .option('--strict', 'exit 1 on warnings too', false)
    .option('--json', 'print JSON', false)
    .action(async (flags: { sampleSeconds: number; window: number; maxAgeSeconds: number; cacheSample: number; strict: boolean; json: boolean }, command: Command) =>
      withContext(command, env, async (context) => {
        const { workloads } = await registryOf(command, env);
        const report = await runDoctor(context, {
          sampleSeconds: flags.sampleSeconds, windowMinutes: flags.window, maxOldestAgeSeconds: flags.maxAgeSeconds, cacheSample: flags.cacheSample,
          dependencyRejectionReasons: workloadReasons(workloads).filter((reason) => reason.dependencyRejection).map((reason) => reason.code),
          cachedEntities: workloadEntities(workloads),
        });
        if (flags.json) printJson(env.io, report);
        else {
          line(env.io.stdout, `ballast doctor: ${report.stackName} (env ${report.env}) — ${report.verdict.toUpperCase()}`);
          report.checks.forEach((check, index) => {
            line(env.io.stdout, `${String(index + 1).padStart(2)}. [${MARK[check.verdict]}] ${check.question}`);
            for (const fact of check.evidence) line(env.io.stdout, `        ${fact}`);
            if (check.verdict !== 'ok') line(env.io.stdout, `        next: ${check.next}`);
          });
        }
        env.setExit(report.verdict === 'fail' || (flags.strict && report.verdict === 'warn') ? EXIT.unhealthy : EXIT.ok);
      }));
}
