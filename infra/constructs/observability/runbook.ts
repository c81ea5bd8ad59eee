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
  readonly cacheFallbacks: string;
  readonly breakerOpened: string;
  readonly invalidationsSkipped: string;
  readonly cacheThrottledCommands: string;
  readonly tableThrottles: (table: string) => string;
  readonly tableSystemErrors: (table: string) => string;
  readonly notificationsFailed: string;
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
  readonly cacheFallbacksPer5Minutes: number;
  readonly cacheThrottledCommandsPer5Minutes: number;
  readonly dynamoDbThrottlesPer5Minutes: number;
  readonly dynamoDbSystemErrorsPer5Minutes: number;
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
      + 'Covers every version behind the alias; a deployment rolls back on the new version\'s own p99 alarm.',
    iteratorAge: `The cache invalidator is ${t.iteratorAgeSeconds} s or more behind the state table's stream: cached accounts stay `
      + `stale until it catches up. First: ${doctor} (iterator age, invalidation lag, invalidator errors; is Redis reachable?).`,
    invalidatorFailures: 'Stream records the cache invalidator gave up on (retries exhausted or too old) are in its on-failure queue: '
      + 'those accounts may be stale in the cache until the invalidation repair re-applies them (it drains the queue; a batch '
      + `no longer in the stream is repaired by a full reconcile). First: ${doctor} (is Redis reachable?); if messages stay, `
      + 'read the invalidation repair\'s logs.',
    invalidationRepairDeadLetters: 'Failed invalidation batches the invalidation repair could not apply either, after every delivery, are in '
      + `its DLQ: those accounts may stay stale in the cache until their TTL. First: ${cli('cache check --repair')} to compare `
      + 'entries with the table and repair them; then the repair\'s error logs for the cause, and redrive the DLQ to its source once fixed.',
    lockContention: `${t.lockContentionPer5Minutes} or more claim attempts in 5 minutes met a lock another job held (a waiting job tries `
      + `again after its backoff, up to five times per message, so one job waiting half a minute counts five): hot resources, or holders `
      + `stalling until their lease expires. First: ${doctor} (orphan and contended locks, lock wait by version).`,
    duplicateRate: `Duplicates suppressed reached ${t.duplicateRatePercent} % of jobs seen by worker v${t.workerVersion}: messages `
      + `are delivered again (visibility timeouts expiring, failed deletes) or producers resend. First: ${doctor} (redeliveries, `
      + 'receive vs delete rate, duration vs timeout).',
    readApiErrors: `The read API answered ${t.readApiServerErrorsPer5Minutes} or more requests in 5 minutes with 5xx (errors, `
      + `timeouts): a bug or the state table failing (Redis outages fall back to the table). First: ${doctor}, then the read API's `
      + 'error logs ("read request failed").',
    cacheFallbacks: `${t.cacheFallbacksPer5Minutes} or more cache reads in 5 minutes were answered from the state table because Redis `
      + `failed or the circuit breaker was open: reads still work, at DynamoDB's latency and cost. First: ${doctor} (is Redis reachable? `
      + 'breaker state, ElastiCache throttling).',
    breakerOpened: 'A cache circuit breaker opened: Redis failed repeatedly, so reads go to the state table until a probe succeeds. '
      + `First: ${doctor} (cache reachability); the ElastiCache console for the serverless cache's events and limits.`,
    invalidationsSkipped: 'The cache invalidator skipped stream records it could not read (by reason, e.g. malformed-record): those '
      + `accounts' cache entries were not tombstoned and may be stale until their TTL. First: ${cli('cache check --repair')}, then the `
      + 'invalidator\'s logs ("skipped") for the records and their cause.',
    cacheThrottledCommands: `ElastiCache throttled ${t.cacheThrottledCommandsPer5Minutes} or more commands in 5 minutes: the cache is scaling `
      + `slower than the load, or it hit its ECPU limit (CacheUsageLimits); throttled reads fall back to the table. First: ${doctor}; `
      + 'then the cache\'s ElastiCacheProcessingUnits against its configured maximum.',
    tableThrottles: (table) => `DynamoDB throttled ${t.dynamoDbThrottlesPer5Minutes} or more ${table} requests in 5 minutes (on-demand `
      + `throughput or a hot partition): jobs retry with backoff and the backlog grows. First: ${doctor} (backlog, retries by reason), `
      + 'then the table\'s hottest keys (CloudWatch Contributor Insights) and its on-demand maximum throughput.',
    tableSystemErrors: (table) => `DynamoDB answered ${t.dynamoDbSystemErrorsPer5Minutes} or more ${table} requests in 5 minutes with `
      + `an internal error (500): the SDK retries them, jobs retry after that, nothing is lost. First: ${doctor}; if it persists, the AWS `
      + 'Health Dashboard for DynamoDB in this region.',
    notificationsFailed: 'The alarm topic failed to deliver a notification to a subscription in the last 5 minutes (an email address that '
      + 'bounces, an endpoint that refuses): on-call may not have heard of an alarm. First: `ballast status --env '
      + `${t.environmentName}\` lists the alarms in ALARM; then the topic's subscriptions in the SNS console (confirmed? the right address?).`,
  };
}
