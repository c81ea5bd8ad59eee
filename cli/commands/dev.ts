import { Command } from 'commander';
import { positiveInteger, nonNegativeNumber, type CommandEnvironment } from './shared.ts';

interface DevFlags {
  dir?: string;
  demo: boolean;
  jobs: number;
  duration: number;
  crashRate: number;
  timeoutRate: number;
  consolePort: number;
  exitAfterDemo: boolean;
  enforceIam: boolean;
  context: string[];
}

/** `ballast dev`: the app of this directory's `cdk.json` on local engines, with its console (see local/dev). */
export function devCommand(env: CommandEnvironment): Command {
  return new Command('dev')
    .description("run this CDK project's app locally (cdk.json, -c env=local) on real emulators, with its workloads' fakes and the console; Ctrl-C stops it cleanly")
    .option('--dir <dir>', 'the CDK project (with cdk.json)', process.cwd())
    .option('--demo', "send the workloads' demo traffic once it runs", false)
    .option('--jobs <n>', 'demo jobs', positiveInteger('--jobs'), 3000)
    .option('--duration <s>', 'demo length in seconds', positiveInteger('--duration'), 60)
    .option('--crash-rate <r>', 'share of worker invocations crashed after their work', nonNegativeNumber('--crash-rate'), 0)
    .option('--timeout-rate <r>', 'share of worker invocations delayed past their timeout', nonNegativeNumber('--timeout-rate'), 0)
    .option('--console-port <port>', 'the console on a fixed port (default: a free one, printed)', nonNegativeNumber('--console-port'), 0)
    .option('--exit-after-demo', 'stop once the demo is done', false)
    .option('--no-enforce-iam', "allow every call instead of authorizing it against the template's IAM, resource and endpoint policies (to tell a refusal from a bug)")
    .option('-c, --context <key=value>', 'CDK context for the synth, repeatable', (value: string, previous: string[] = []) => [...previous, value], [])
    .action(async (flags: DevFlags) => {
      const { runDev } = await import('../../local/dev/run.ts');
      const context = Object.fromEntries(flags.context.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
      await runDev({
        appDir: flags.dir, context,
        demo: flags.demo || flags.exitAfterDemo ? { jobs: flags.jobs, durationMs: flags.duration * 1000 } : undefined,
        crashRate: flags.crashRate, timeoutRate: flags.timeoutRate, consolePort: flags.consolePort, exitAfterDemo: flags.exitAfterDemo,
        enforceIam: flags.enforceIam,
        log: (text = '') => void env.io.stdout.write(`${text}\n`),
      });
    });
}
