import { Command } from 'commander';
import { findTraces, formatTraces, type TraceQueryResult } from '../../shared/operations/traces.ts';
import { EXIT, UsageError } from '../errors.ts';
import { line, printJson } from '../io.ts';
import { duration, positiveInteger, withContext, type CommandEnvironment } from './shared.ts';

/** How often `--wait` asks again. */
const WAIT_POLL_MS = 500;

export function traceCommand(env: CommandEnvironment): Command {
  return new Command('trace')
    .description("a job's spans as a tree: produce, queue wait, each delivery, claim, external call, commit, stream record, tombstone, first read")
    .argument('<key>', 'a job id, a trace id (32 hex digits, or X-Ray\'s 1-…-…) or an idempotency key')
    .option('--wait <duration>', 'ask again until a trace is found or this long has passed (e.g. 10s); spans arrive when an invocation ends', duration('--wait'), 0)
    .option('--width <columns>', 'cut lines at this many columns', positiveInteger('--width'), 100)
    .option('--json', 'print JSON: the traces with every span', false)
    .addHelpText('after', `
Exit codes: 0 a trace was found, 1 none was, 2 bad usage, 3 the spans cannot be read (no local cloud;
a deployed env: its spans are in X-Ray).`)
    .action(async (key: string, flags: { wait: number; width: number; json: boolean }, command: Command) => {
      if (key.trim() === '') throw new UsageError('name what to trace: a job id, a trace id or an idempotency key');
      return withContext(command, env, async (context) => {
        const deadlineMs = Date.now() + flags.wait;
        let result: TraceQueryResult = await findTraces(context, key.trim());
        while (result.traces.length === 0 && Date.now() + WAIT_POLL_MS <= deadlineMs) {
          await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
          result = await findTraces(context, key.trim());
        }
        if (flags.json) printJson(env.io, result);
        else if (result.traces.length === 0) {
          line(env.io.stderr, `no trace of '${key.trim()}' as a job id, trace id or idempotency key (spans arrive when an invocation ends; the store keeps the most recent traces)`);
        } else {
          line(env.io.stdout, `'${key.trim()}' is a ${result.matchedBy.join(' and ')}: ${result.traces.length} trace${result.traces.length === 1 ? '' : 's'}`);
          for (const text of formatTraces(result, flags.width)) line(env.io.stdout, text);
        }
        env.setExit(result.traces.length > 0 ? EXIT.ok : EXIT.unhealthy);
      });
    });
}
