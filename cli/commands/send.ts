import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { Command } from 'commander';
import { parseJobLines, sendEnvelopes } from '../../shared/producer/index.ts';
import { EXIT, UsageError } from '../errors.ts';
import { line, printJson, progressBar } from '../io.ts';
import { positiveInteger, registryOf, withContext, type CommandEnvironment } from './shared.ts';

interface SendFlags {
  producerVersion: string;
  skipInvalid: boolean;
  validateOnly: boolean;
  maxAttempts: number;
  json: boolean;
  progress: boolean;
}

export function sendCommand(env: CommandEnvironment): Command {
  return new Command('send')
    .description(`send jobs (JSON lines: {"type","resourceId","payload","idempotencyKey"}) from a file or stdin, each validated by its type's schema (the registry's job types)`)
    .argument('[file]', 'jobs file; - or omitted reads stdin')
    .option('--producer-version <version>', 'stamped on envelopes that do not name one', 'ballast-cli')
    .option('--skip-invalid', 'send the valid lines even if some are invalid (exit 1); default: send nothing (exit 2)', false)
    .option('--validate-only', 'check every line, send nothing', false)
    .option('--max-attempts <n>', 'attempts per failed entry', positiveInteger('--max-attempts'), 5)
    .option('--json', 'print the summary as JSON', false)
    .option('--no-progress', 'no progress bar')
    .action(async (file: string | undefined, flags: SendFlags, command: Command) => {
      const text = file && file !== '-' ? await readFile(file, 'utf8').catch((error: Error) => {
        throw new UsageError(`cannot read ${file}: ${error.message}`);
      }) : await readAll(env.io.stdin);
      const { catalog } = await registryOf(command, env);
      const { jobs, errors } = parseJobLines(text, { catalog, producerVersion: flags.producerVersion });
      for (const error of errors) line(env.io.stderr, `error: ${error.message}`);
      const refuse = errors.length > 0 && !flags.skipInvalid;
      if (flags.validateOnly || refuse || jobs.length === 0) {
        const summary = { total: jobs.length + errors.length, valid: jobs.length, invalid: errors.length, sent: 0, failed: 0, invalidLines: errors.map((e) => ({ line: e.line, error: e.message })) };
        if (flags.json) printJson(env.io, summary);
        else line(env.io.stdout, `${jobs.length} valid, ${errors.length} invalid line(s); nothing sent${refuse ? ' (fix the lines above, or pass --skip-invalid)' : ''}`);
        env.setExit(errors.length > 0 ? EXIT.usage : EXIT.ok);
        return;
      }
      await withContext(command, env, async (context) => {
        const bar = progressBar(env.io, jobs.length, 'send', flags.progress);
        const result = await sendEnvelopes(context.clients.sqs, context.stack.outputs.JobsQueueUrl, jobs.map((j) => j.envelope), {
          maxAttempts: flags.maxAttempts,
          onProgress: (p) => bar.update(p.sent + p.failed, { detail: `failed ${p.failed}` }),
        });
        bar.stop();
        const lineOf = new Map(jobs.map((j) => [j.envelope.jobId, j.line]));
        const failed = result.failed.map((f) => ({ line: lineOf.get(f.envelope.jobId), jobId: f.envelope.jobId, code: f.code, message: f.message, attempts: f.attempts }));
        const retried = result.sent.filter((s) => s.attempts > 1).length;
        const summary = { total: jobs.length + errors.length, valid: jobs.length, invalid: errors.length, sent: result.sent.length, retried, failed: failed.length, failures: failed, invalidLines: errors.map((e) => ({ line: e.line, error: e.message })) };
        if (flags.json) printJson(env.io, summary);
        else {
          for (const f of failed) line(env.io.stderr, `failed: line ${f.line} job ${f.jobId}: ${f.code} ${f.message} (after ${f.attempts} attempt(s))`);
          line(env.io.stdout, `sent ${result.sent.length} (${retried} after retries), failed ${failed.length}, invalid ${errors.length} → ${context.stack.outputs.JobsQueueUrl}`);
        }
        env.setExit(failed.length > 0 || errors.length > 0 ? EXIT.unhealthy : EXIT.ok);
      });
    });
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
