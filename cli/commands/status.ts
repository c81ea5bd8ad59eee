import { Command } from 'commander';
import { gatherStatus, type QueueStatus } from '../../shared/operations/status.ts';
import type { AlarmNotifications } from '../../shared/operations/metrics.ts';
import { EXIT } from '../errors.ts';
import { line, printJson } from '../io.ts';
import { positiveInteger, withContext, type CommandEnvironment } from './shared.ts';

const queue = (q: QueueStatus) => `${q.visible} visible, ${q.inFlight} in flight, ${q.delayed} delayed; oldest ${q.oldestAgeSeconds ?? '?'}s (${q.oldestAgeSource})`;

export function statusCommand(env: CommandEnvironment): Command {
  return new Command('status')
    .description('queue depth, oldest age, in flight, DLQ depth, alarm states, worker versions, cache')
    .option('--window <minutes>', 'metrics window', positiveInteger('--window'), 15)
    .option('--json', 'print JSON', false)
    .action(async (flags: { window: number; json: boolean }, command: Command) => withContext(command, env, async (context) => {
      const status = await gatherStatus(context, flags.window);
      const alarming = status.alarms.ok ? status.alarms.value.filter((a) => a.state === 'ALARM') : [];
      if (flags.json) printJson(env.io, status);
      else {
        line(env.io.stdout, `stack ${status.stackName} (env ${status.env})`);
        line(env.io.stdout, `jobs queue     ${queue(status.jobs)}`);
        line(env.io.stdout, `dead letters   ${queue(status.deadLetters)}`);
        line(env.io.stdout, `invalidator failures ${status.invalidatorFailures.visible}`);
        line(env.io.stdout, `alarms         ${status.alarms.ok ? `${status.alarms.value.length} (${alarming.length} in ALARM${alarming.length ? `: ${alarming.map((a) => a.name).join(', ')}` : ''})` : `unknown: ${status.alarms.why}`}`);
        line(env.io.stdout, `notifications  ${status.notifications.ok ? notifications(status.notifications.value) : `unknown: ${status.notifications.why}`}`);
        line(env.io.stdout, `worker versions ${status.workerVersions.ok ? Object.entries(status.workerVersions.value).map(([v, n]) => `${v} (${n} processed)`).join(', ') || `none in ${flags.window} min` : `unknown: ${status.workerVersions.why}`}`);
        line(env.io.stdout, `cache          ${status.cache.status} ${status.cache.endpoint ?? ''}`);
      }
      const refused = status.notifications.ok ? status.notifications.value.failed.length : 0;
      env.setExit(alarming.length > 0 || refused > 0 || status.deadLetters.visible > 0 ? EXIT.unhealthy : EXIT.ok);
    }));
}

/** `3 sent, 1 failed (ballast-prod-JobsQueue-DLQ: Failed to execute action …)`. */
function notifications(value: AlarmNotifications): string {
  const [latest] = value.failed.slice(-1);
  return `${value.sent} sent, ${value.failed.length} failed${latest ? ` (${latest.alarm}: ${latest.summary.slice(0, 200)})` : ''}`;
}
