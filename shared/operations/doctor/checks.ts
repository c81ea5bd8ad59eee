import { REASONS } from '../../errors/index.ts';
import { total, type MetricsAnswer } from '../metrics.ts';
import type { Evidence } from './evidence.ts';

export const VERDICTS = { ok: 'ok', warn: 'warn', fail: 'fail', unknown: 'unknown' } as const;
export type Verdict = (typeof VERDICTS)[keyof typeof VERDICTS];

/** One answered question of the incident checklist. */
export interface CheckResult {
  readonly id: string;
  readonly question: string;
  readonly verdict: Verdict;
  readonly evidence: readonly string[];
  readonly next: string;
}

type Check = (e: Evidence) => CheckResult;
const result = (id: string, question: string, verdict: Verdict, evidence: string[], next: string): CheckResult => ({ id, question, verdict, evidence, next });
const fmt = (groups: Record<string, number>) => Object.entries(groups).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
const known = <T>(answer: MetricsAnswer<T>): T | undefined => (answer.ok ? answer.value : undefined);
const backlog = (c: { visible: number; delayed: number }) => c.visible + c.delayed;
const pick = (groups: Record<string, number> | undefined, names: readonly string[]) =>
  Object.fromEntries(Object.entries(groups ?? {}).filter(([reason, n]) => names.includes(reason) && n > 0));

const backlogGrowing: Check = (e) => {
  const q = 'Is the backlog growing (depth, oldest age)?';
  const age = e.jobs.oldestAgeSeconds;
  const evidence = [`backlog ${backlog(e.jobsBefore)} → ${backlog(e.jobs)} over ${e.options.sampleSeconds}s; in flight ${e.jobs.inFlight}`,
    `oldest message ${age === undefined ? 'unknown' : `${age}s`} (${e.jobs.oldestAgeSource})`];
  if (age !== undefined && age > e.options.maxOldestAgeSeconds) {
    return result('backlog', q, 'fail', evidence, `oldest message is over ${e.options.maxOldestAgeSeconds}s: see 'processing'; if the worker runs but is slow, raise the mapping's maximum concurrency`);
  }
  if (backlog(e.jobs) > backlog(e.jobsBefore)) return result('backlog', q, 'warn', evidence, 'backlog grew during the sample: run doctor again with --sample-seconds 30 to see the trend');
  return result('backlog', q, 'ok', evidence, 'none');
};

const processing: Check = (e) => {
  const q = 'Is the worker processing (receive vs delete rate)?';
  const received = known(e.received);
  const deleted = known(e.deleted);
  const evidence = [received === undefined ? `receive/delete metrics: ${e.received.ok ? 'no data' : e.received.why}` : `received ${received}, deleted ${deleted ?? 0} in ${e.options.windowMinutes} min`,
    `visible ${e.jobsBefore.visible} → ${e.jobs.visible}, in flight ${e.jobsBefore.inFlight} → ${e.jobs.inFlight}`];
  const stalled = e.jobs.visible > 0 && e.jobs.inFlight === 0 && e.jobsBefore.inFlight === 0 && backlog(e.jobs) >= backlog(e.jobsBefore);
  if (stalled && !received) {
    return result('processing', q, 'fail', [...evidence, 'messages wait and nothing receives them'],
      'the worker is not polling: check the event source mapping is Enabled and the function is not throttled (concurrency 0) or failing to start; aws lambda get-event-source-mapping');
  }
  if (received && received > 0 && !deleted) {
    return result('processing', q, 'fail', [...evidence, 'messages are received but none deleted'], 'every batch fails: see the worker logs and `ballast doctor` versions/dependencies checks');
  }
  return result('processing', q, 'ok', evidence, 'none');
};

const redeliveries: Check = (e) => {
  const q = 'Are visibility timeouts expiring (redeliveries, duplicates)?';
  const processed = known(e.processedByVersion);
  const duplicates = known(e.duplicatesByVersion);
  const retries = known(e.retriesByReason);
  if (processed === undefined || duplicates === undefined || retries === undefined) {
    const missing = [e.processedByVersion, e.duplicatesByVersion, e.retriesByReason].find((a) => !a.ok);
    return result('redeliveries', q, 'unknown', [`metrics: ${missing && !missing.ok ? missing.why : 'unavailable'}`], 'read the dashboard (DuplicatesSuppressed, JobsRetried)');
  }
  const done = Math.max(1, total(processed));
  const evidence = [`processed ${total(processed)}, duplicates suppressed ${total(duplicates)}, retries ${total(retries)} (${fmt(retries)})`];
  const deadline = retries[REASONS.deadline] ?? 0;
  if (total(duplicates) / done > 0.05 || deadline / done > 0.05) {
    return result('redeliveries', q, 'warn', evidence, 'messages come back while still being worked on: check duration p99 against the timeout and that the visibility timeout is ≥ 6× the function timeout');
  }
  return result('redeliveries', q, 'ok', evidence, 'none');
};

const cleanStop: Check = (e) => {
  const q = 'Did workers stop cleanly?';
  if (!e.control.ok) return result('clean-stop', q, 'unknown', [`control table: ${e.control.why}`], 'check DynamoDB access');
  const claims = e.control.value.abandonedClaims;
  const evidence = [`${claims.length} abandoned claim(s) (IN_PROGRESS past lease), ${e.control.value.liveClaims} live; scanned ${e.control.value.scannedItems} items${e.control.value.complete ? '' : ' (partial)'}`,
    ...claims.slice(0, 5).map((c) => `${c.idempotencyKey} (${c.jobType}) lease ended ${Math.round(c.expiredForMs / 1000)}s ago`)];
  if (claims.length > 0) return result('clean-stop', q, 'fail', evidence, 'a worker died between claim and commit (timeout, crash, OOM): their messages retry and re-claim after the lease; check the function\'s timeouts and errors');
  return result('clean-stop', q, 'ok', evidence, 'none');
};

const locks: Check = (e) => {
  const q = 'Are there orphan or contended locks?';
  if (!e.control.ok) return result('locks', q, 'unknown', [`control table: ${e.control.why}`], 'check DynamoDB access');
  const orphans = e.control.value.orphanLocks;
  const contention = known(e.lockContention);
  const evidence = [`${orphans.length} orphan lock(s) past lease, ${e.control.value.heldLocks} held`,
    ...orphans.slice(0, 5).map((l) => `lock#${l.resourceId} owner ${l.ownerToken} fence ${l.fence} lease ended ${Math.round(l.expiredForMs / 1000)}s ago`),
    `lock contention: ${contention ? total(contention) : 'no data'}; commits fenced: ${known(e.fenced) ? total(known(e.fenced) ?? {}) : 'no data'}`];
  if (orphans.length > 0) return result('locks', q, 'fail', evidence, 'their holders stopped without releasing: the next job on each resource takes the lock over (higher fence); look for crashed or timed-out invocations at those times');
  if (contention && total(contention) > 100) return result('locks', q, 'warn', evidence, 'many claim attempts met held locks (each waiting job tries again after its backoff): jobs queue on the same resources; spread hot accounts or use a FIFO queue grouped by resource');
  return result('locks', q, 'ok', evidence, 'none');
};

const invalidation: Check = (e) => {
  const q = 'Is invalidation running (failures, lag, stale entries)?';
  const age = e.invalidatorIteratorAgeMs;
  const evidence = [`invalidator failure queue: ${e.invalidatorFailures.visible} message(s)`,
    age.ok ? `stream iterator age: ${age.value === undefined ? 'no data' : `${Math.round(age.value / 1000)}s max`}` : `stream iterator age: unknown (${age.why})`,
    e.cache.ok ? `cache sample: ${e.cache.value.mismatches}/${e.cache.value.sampled} stale (rate ${(e.cache.value.mismatchRate * 100).toFixed(1)}%)` : `cache: ${e.cache.why}`,
    ...(e.cache.ok ? e.cache.value.details.slice(0, 5).map((d) => `${d.entity} ${d.id}: cached v${d.cachedVersion ?? '-'} vs table v${d.tableVersion ?? '-'}`) : [])];
  if (e.invalidatorFailures.visible > 0) return result('invalidation', q, 'fail', evidence, 'stream batches failed past their retries: fix the cause, then `ballast cache check --repair`');
  if (e.cache.ok && e.cache.value.mismatches > 0) return result('invalidation', q, 'fail', evidence, 'stale entries are served: `ballast cache check --repair`, then check the invalidator\'s errors and iterator age');
  if (age.ok && (age.value ?? 0) > 60_000) return result('invalidation', q, 'warn', evidence, 'the invalidator is falling behind the state table: reads can serve the previous version for that long; check its errors, duration and throttles');
  if (!e.cache.ok) return result('invalidation', q, 'unknown', evidence, 'run `ballast cache check` from where the cache is reachable (inside the VPC)');
  return result('invalidation', q, 'ok', evidence, 'none');
};

const COMPATIBILITY = [REASONS.invalidEnvelope, REASONS.incompatibleVersion, REASONS.invalidPayload, REASONS.unknownJobType];
const compatibility: Check = (e) => {
  const q = 'Are payloads compatible across versions (deserialisation errors by version)?';
  const sent = pick(known(e.dlqSentByReason), COMPATIBILITY);
  const retried = pick(known(e.retriesByReason), [REASONS.incompatibleVersion]);
  const inDlq = e.deadLetters.ok ? e.deadLetters.value.reasons.filter((r) => COMPATIBILITY.includes(r.reason as never)) : [];
  const evidence = [`dead-lettered: ${fmt(sent)}; retried: ${fmt(retried)}`,
    ...inDlq.map((r) => `DLQ ${r.reason} ${r.count} (types ${fmt(r.types)}; worker versions ${fmt(r.workerVersions)})`)];
  if (Object.keys(sent).length > 0 || inDlq.length > 0 || Object.keys(retried).length > 0) {
    return result('compatibility', q, 'fail', evidence, 'a producer sends what this worker cannot read: `ballast dlq list --reason <reason>` for samples; fix the producer or roll the worker forward, then `ballast dlq replay --reason incompatible-version`');
  }
  return result('compatibility', q, 'ok', evidence, 'none');
};

const dependency: Check = (e) => {
  const q = 'Did a dependency change behaviour?';
  const rejections = e.options.dependencyRejectionReasons;
  const reasons = [REASONS.dependencyUnavailable, REASONS.throttled, ...rejections];
  const retried = pick(known(e.retriesByReason), reasons);
  const sent = pick(known(e.dlqSentByReason), reasons);
  const alarming = known(e.alarms)?.filter((a) => a.state === 'ALARM') ?? [];
  const evidence = [`retries: ${fmt(retried)}; dead-lettered: ${fmt(sent)}`, `alarms in ALARM: ${alarming.map((a) => a.name).join(', ') || 'none'}${e.alarms.ok ? '' : ` (${e.alarms.why})`}`];
  if (Object.keys(sent).length > 0) {
    const refused = Object.keys(sent).filter((reason) => rejections.includes(reason));
    return result('dependency', q, 'fail', evidence, `an external API refuses requests (${refused.join(', ') || Object.keys(sent).join(', ')}): compare with its status page / recent changes; `
      + `replay with \`ballast dlq replay --reason ${refused[0] ?? Object.keys(sent)[0]}\` once fixed`);
  }
  if (Object.keys(retried).length > 0 || alarming.length > 0) return result('dependency', q, 'warn', evidence, 'a dependency is slow or throttling: check DynamoDB throttles, external API latency and the alarms listed');
  return result('dependency', q, 'ok', evidence, 'none');
};

const versions: Check = (e) => {
  const q = 'Does only the new version fail (metrics by version)?';
  const processed = known(e.processedByVersion);
  const failed = known(e.dlqSentByVersion);
  if (!processed || !failed) return result('versions', q, 'unknown', ['metrics by version unavailable'], 'read the dashboard split by workerVersion');
  const all = [...new Set([...Object.keys(processed), ...Object.keys(failed)])];
  const rates = all.map((v) => ({ v, rate: (failed[v] ?? 0) / Math.max(1, (processed[v] ?? 0) + (failed[v] ?? 0)) }));
  const evidence = rates.map(({ v, rate }) => `${v}: processed ${processed[v] ?? 0}, dead-lettered ${failed[v] ?? 0} (${(rate * 100).toFixed(1)}%)`);
  if (rates.length >= 2) {
    const sorted = [...rates].sort((a, b) => b.rate - a.rate);
    const [worst, best] = [sorted[0], sorted[sorted.length - 1]];
    if (worst && best && worst.rate > best.rate * 2 + 0.05) {
      return result('versions', q, 'fail', evidence, `only ${worst.v} fails: roll back (CodeDeploy stops the canary on its alarms; aws deploy stop-deployment --auto-rollback-enabled)`);
    }
  }
  return result('versions', q, 'ok', evidence.length ? evidence : ['no jobs in the window'], 'none');
};

const dlqGrowing: Check = (e) => {
  const q = 'Is the DLQ growing, and why?';
  const sent = known(e.dlqSentByReason);
  const reasons = e.deadLetters.ok ? e.deadLetters.value.reasons : [];
  const evidence = [`DLQ ${e.dlqBefore.visible} → ${e.dlq.visible} over ${e.options.sampleSeconds}s; dead-lettered in ${e.options.windowMinutes} min: ${sent ? `${total(sent)} (${fmt(sent)})` : 'no data'}`,
    ...reasons.map((r) => `sampled ${r.reason}: ${r.count} (e.g. ${r.sampleError.slice(0, 120) || '-'})`)];
  const next = 'inspect with `ballast dlq list`, fix the cause, then `ballast dlq replay --reason <reason> --dry-run` and without --dry-run';
  if (e.dlq.visible > e.dlqBefore.visible || (sent && total(sent) > 0)) return result('dlq', q, 'fail', evidence, next);
  if (e.dlq.visible > 0) return result('dlq', q, 'warn', evidence, `not growing, but holds ${e.dlq.visible}: ${next}`);
  return result('dlq', q, 'ok', evidence, 'none');
};

const notificationsDelivered: Check = (e) => {
  const q = 'Do the alarms\' notifications reach on-call?';
  if (!e.notifications.ok) return result('notifications', q, 'unknown', [`alarm history unavailable: ${e.notifications.why}`], 'read the alarms\' history (Action items) in the CloudWatch console');
  const { sent, failed } = e.notifications.value;
  const evidence = [`in ${e.options.windowMinutes} min: ${sent} sent, ${failed.length} failed`, ...failed.slice(-3).map((f) => `${f.alarm}: ${f.summary.slice(0, 240)}`)];
  // An alarm whose notification was refused looks healthy everywhere else: it is itself the incident.
  if (failed.length > 0) {
    return result('notifications', q, 'fail', evidence, 'the alarm topic refuses CloudWatch: its policy must allow cloudwatch.amazonaws.com to sns:Publish (aws:SourceAccount, aws:SourceArn of the alarms); redeploy the stack, then check the alarms in ALARM by hand');
  }
  return result('notifications', q, 'ok', evidence, 'none');
};

/** The incident checklist of DESIGN.md, in its order, and whether on-call hears of it. */
export const CHECKS: readonly Check[] = [backlogGrowing, processing, redeliveries, cleanStop, locks, invalidation, compatibility, dependency, versions, dlqGrowing, notificationsDelivered];

export function runChecks(evidence: Evidence): CheckResult[] {
  return CHECKS.map((check) => check(evidence));
}
