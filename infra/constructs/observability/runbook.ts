/**
 * What each ballast alarm means and what to do first, as alarm descriptions: the text an on-call
 * engineer reads in the notification. Each names the operator CLI command that starts the
 * investigation (`ballast doctor` runs the whole incident checklist).
 */
export interface AlarmRunbook {
  readonly deadLetters: string;
  readonly newDeadLetters: string;
  readonly oldestMessageAge: string;
  readonly throttles: string;
  readonly durationP99: string;
  readonly iteratorAge: string;
  readonly invalidatorFailures: string;
  readonly invalidationRepairDeadLetters: string;
  readonly lockContention: string;
  readonly duplicateRate: string;
  readonly readApiErrors: string;
}

export interface RunbookThresholds {
  readonly environmentName: string;
  readonly oldestMessageAgeSeconds: number;
  readonly workerTimeoutSeconds: number;
  readonly iteratorAgeSeconds: number;
  readonly lockContentionPer5Minutes: number;
  readonly duplicateRatePercent: number;
  readonly readApiServerErrorsPer5Minutes: number;
  readonly workerVersion: string;
}

/**
 * The descriptions for one environment's alarms.
 *
 * @example
 * const text = alarmRunbook({ environmentName: 'prod', ... }).deadLetters;
 */
export function alarmRunbook(t: RunbookThresholds): AlarmRunbook {
  const cli = (command: string): string => `\`ballast ${command} --env ${t.environmentName}\``;
  const doctor = cli('doctor');
  return {
    deadLetters: `Jobs are in the dead-letter queue: each failed fatally (invalid envelope or payload, key reused, unknown type...) `
      + `or ran out of retries, and none is retried on its own. First: ${cli('dlq list')} for the reasons (ballast.reason) and `
      + `worker versions, ${cli('dlq show <id>')} for one message; fix the cause, then ${cli('dlq replay --dry-run')} and replay. `
      + 'Stays in ALARM while any remains; the new-dead-letters alarm notifies again on every new arrival.',
    newDeadLetters: `New jobs reached the dead-letter queue in the last 5 minutes (the worker dead-lettered them with a reason). `
      + `First: ${cli('dlq list --newer-than 15m')} for their reasons and worker versions; a new reason or version points at the cause. `
      + 'Does not roll a deployment back: bad input and business rules dead-letter jobs too.',
    oldestMessageAge: `The oldest job has waited ${t.oldestMessageAgeSeconds} s or more: the backlog is not draining (worker failing, `
      + `throttled, slow, or at its maximum concurrency). First: ${doctor} (depth, oldest age, receive vs delete rate, errors by version).`,
    throttles: `Lambda throttled the worker: invocations were refused for lack of concurrency, so batches wait and age. First: `
      + `${cli('status')} for backlog and in-flight, then check the account's concurrent-executions limit and other functions' use of it.`,
    durationP99: `Worker p99 duration is at or above 80 % of its ${t.workerTimeoutSeconds} s timeout: batches near the timeout are `
      + `cut off and redelivered (duplicates, lock contention). First: ${doctor} (duration and errors by version; dependency latency). `
      + 'Rolls back a worker deployment in progress.',
    iteratorAge: `The cache invalidator is ${t.iteratorAgeSeconds} s or more behind the state table's stream: cached accounts stay `
      + `stale until it catches up. First: ${doctor} (iterator age, invalidation lag, invalidator errors; is Redis reachable?).`,
    invalidatorFailures: 'Stream records the cache invalidator gave up on (retries exhausted or too old) are in its on-failure queue: '
      + 'those accounts may be stale in the cache until the invalidation repair re-applies them (it drains the queue; a batch '
      + `no longer in the stream is repaired by a full reconcile). First: ${doctor} (is Redis reachable?); if messages stay, `
      + 'read the invalidation repair\'s logs.',
    invalidationRepairDeadLetters: 'Failed invalidation batches the invalidation repair could not apply either, after every delivery, are in '
      + `its DLQ: those accounts may stay stale in the cache until their TTL. First: ${cli('cache check --repair')} to compare `
      + 'entries with the table and repair them; then the repair\'s error logs for the cause, and redrive the DLQ to its source once fixed.',
    lockContention: `${t.lockContentionPer5Minutes} or more jobs in 5 minutes were retried because their resource's lock was busy: `
      + `hot resources, or holders stalling until their lease expires. First: ${doctor} (orphan and contended locks, lock wait by version).`,
    duplicateRate: `Duplicates suppressed reached ${t.duplicateRatePercent} % of jobs seen by worker v${t.workerVersion}: messages `
      + `are delivered again (visibility timeouts expiring, failed deletes) or producers resend. First: ${doctor} (redeliveries, `
      + 'receive vs delete rate, duration vs timeout).',
    readApiErrors: `The read API answered ${t.readApiServerErrorsPer5Minutes} or more requests in 5 minutes with 5xx (errors, `
      + `timeouts): a bug or the state table failing (Redis outages fall back to the table). First: ${doctor}, then the read API's `
      + 'error logs ("read request failed").',
  };
}
