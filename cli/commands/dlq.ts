import { Command } from 'commander';
import { describeDeadLetter, isFiltered, type DeadLetterFilter } from '../../shared/operations/dlq-messages.ts';
import { listDeadLetters, redriveAll, replayDeadLetters, type DlqLocation } from '../../shared/operations/dlq.ts';
import type { OpsContext } from '../../shared/operations/context.ts';
import { EXIT, UsageError } from '../errors.ts';
import { line, printJson, progressBar, table } from '../io.ts';
import { duration, list, positiveInteger, registryOf, withContext, type CommandEnvironment } from './shared.ts';

interface FilterFlags {
  reason?: string[];
  type?: string[];
  olderThan?: number;
  newerThan?: number;
  messageId?: string[];
  max: number;
  json: boolean;
}

const location = (context: OpsContext): DlqLocation => ({
  sqs: context.clients.sqs, deadLetterQueueUrl: context.stack.outputs.JobsDeadLetterQueueUrl, defaultSourceQueueUrl: context.stack.outputs.JobsQueueUrl,
});

const filterOf = (flags: FilterFlags): DeadLetterFilter => ({
  reasons: flags.reason, types: flags.type, olderThanMs: flags.olderThan, newerThanMs: flags.newerThan, messageIds: flags.messageId,
});

function withFilters(command: Command): Command {
  return command
    .option('--reason <reason>', 'only this ballast.reason (repeatable, or comma-separated)', list)
    .option('--type <type>', 'only this job type (repeatable)', list)
    .option('--older-than <duration>', 'failed at least this long ago (90s, 15m, 2h, 3d)', duration('--older-than'))
    .option('--newer-than <duration>', 'failed at most this long ago', duration('--newer-than'))
    .option('--message-id <id>', 'only this message (repeatable)', list)
    .option('--max <n>', 'read at most this many DLQ messages', positiveInteger('--max'), 1000)
    .option('--json', 'print JSON', false);
}

export function dlqCommand(env: CommandEnvironment): Command {
  const dlq = new Command('dlq').description('inspect and replay the jobs dead-letter queue');

  dlq.addCommand(withFilters(new Command('list').description('dead letters grouped by reason, with counts (copies of one source message count once)'))
    .action(async (flags: FilterFlags, command: Command) => withContext(command, env, async (context) => {
      const listing = await listDeadLetters(location(context), filterOf(flags), flags.max);
      if (flags.json) {
        printJson(env.io, { total: listing.total, selected: listing.selected, copies: listing.copies, reasons: listing.reasons, messages: listing.messages.map(describeDeadLetter) });
      } else {
        const extra = listing.copies - listing.total;
        line(env.io.stdout, `${listing.selected} of ${listing.total} dead letter(s) read from ${context.stack.outputs.JobsDeadLetterQueueUrl}${extra > 0 ? ` (${listing.copies} DLQ messages: ${extra} extra ${copiesWord(extra)} of a source message, listed once)` : ''}`);
        line(env.io.stdout, table([['REASON', 'COUNT', 'TYPES', 'WORKER VERSIONS', 'OLDEST', 'EXAMPLE ERROR'],
          ...listing.reasons.map((r) => [r.reason, `${r.count}${r.copies > r.count ? ` (${r.copies} copies)` : ''}`, Object.keys(r.types).join(','), Object.keys(r.workerVersions).join(','), r.oldestFailedAt ?? '-', r.sampleError.slice(0, 60)])]));
        const copied = listing.messages.filter((m) => m.copies > 1);
        if (copied.length > 0) {
          line(env.io.stdout, '\ndead-lettered more than once (one source message, several DLQ copies; replay sends it once and deletes every copy):');
          line(env.io.stdout, table([['MESSAGE', 'COPIES', 'SOURCE MESSAGE', 'REASON', 'TYPE'],
            ...copied.map((m) => [m.messageId, String(m.copies), m.sourceMessageId, m.reason, m.type ?? '-'])]));
        }
      }
      env.setExit(EXIT.ok);
    })));

  dlq.addCommand(new Command('show').description('one dead letter: envelope and error attributes')
    .argument('<messageId>')
    .option('--max <n>', 'read at most this many DLQ messages to find it', positiveInteger('--max'), 1000)
    .option('--json', 'print JSON', false)
    .action(async (messageId: string, flags: { max: number; json: boolean }, command: Command) => withContext(command, env, async (context) => {
      const listing = await listDeadLetters(location(context), { messageIds: [messageId] }, flags.max);
      const letter = listing.messages[0];
      if (!letter) throw new UsageError(`no dead letter ${messageId} among the ${listing.total} read`);
      const shown = describeDeadLetter(letter);
      if (flags.json) printJson(env.io, shown);
      else {
        const { envelope, body: _body, ...facts } = shown;
        for (const [key, value] of Object.entries(facts)) if (value !== undefined) line(env.io.stdout, `${key.padEnd(16)} ${String(value)}`);
        line(env.io.stdout, 'envelope:');
        line(env.io.stdout, JSON.stringify(envelope ?? letter.body, null, 2));
      }
      env.setExit(EXIT.ok);
    })));

  dlq.addCommand(withFilters(new Command('replay').description('replay selected dead letters after re-checking idempotency and payload version'))
    .option('--all', 'whole-queue redrive with SQS StartMessageMoveTask (no filter)', false)
    .option('--dry-run', 'decide and report, send nothing', false)
    .option('--delete-duplicates', 'also delete dead letters whose key already completed with the same payload', false)
    .option('--no-progress', 'no progress bar')
    .action(async (flags: FilterFlags & { all: boolean; dryRun: boolean; deleteDuplicates: boolean; progress: boolean }, command: Command) => {
      const filter = filterOf(flags);
      if (flags.all === isFiltered(filter)) throw new UsageError('choose what to replay: --all (whole queue), or filters (--reason, --type, --older-than, --newer-than, --message-id)');
      await withContext(command, env, async (context) => {
        let notice: string | undefined;
        if (flags.all && !flags.dryRun) {
          const redrive = await redriveAll(location(context));
          if (redrive.mode === 'message-move-task') {
            if (flags.json) printJson(env.io, redrive);
            else line(env.io.stdout, `started SQS message move task ${redrive.taskHandle}: every dead letter goes back to its source queue (duplicates are suppressed by the worker)`);
            env.setExit(EXIT.ok);
            return;
          }
          notice = `this endpoint has no StartMessageMoveTask (${redrive.why}): falling back to the message-by-message replay with re-checks`;
          line(env.io.stderr, notice);
        }
        const bar = progressBar(env.io, 0, 'replay', false);
        let live = bar;
        const report = await replayDeadLetters(location(context), {
          filter, documents: context.clients.documents, controlTableName: context.stack.outputs.ControlTableName, catalog: (await registryOf(command, env)).catalog,
          dryRun: flags.dryRun, deleteDuplicates: flags.deleteDuplicates, max: flags.max,
          onProgress: (done, total) => {
            if (done === 1) live = progressBar(env.io, total, flags.dryRun ? 'check' : 'replay', flags.progress);
            live.update(done);
          },
        });
        live.stop();
        if (flags.json) printJson(env.io, { ...report, ...(notice ? { notice } : {}) });
        else {
          line(env.io.stdout, table([['MESSAGE', 'COPIES', 'REASON', 'TYPE', 'DECISION', 'DETAIL'],
            ...report.outcomes.map((o) => [o.messageId, String(o.copies), o.reason, o.type ?? '-', `${o.decision}${o.done ? '' : flags.dryRun ? ' (dry run)' : ''}`, o.error ?? o.detail])]));
          line(env.io.stdout, `${flags.dryRun ? 'dry run: would replay' : 'replayed'} ${flags.dryRun ? report.outcomes.filter((o) => o.decision === 'replay').length : report.replayed} of ${report.selected} selected (${report.examined} read${report.copies > report.examined ? `, ${report.copies} DLQ messages with the copies` : ''}); skipped ${JSON.stringify(report.skipped)}; failed ${report.failed}`);
        }
        env.setExit(report.failed > 0 ? EXIT.unhealthy : EXIT.ok);
      });
    }));
  return dlq;
}

const copiesWord = (n: number) => (n === 1 ? 'copy' : 'copies');
