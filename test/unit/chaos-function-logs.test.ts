/** The chaos run's keeper of the functions' WARN and ERROR lines, told back by the keys a violation names. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FunctionLogs } from '../../local/chaos/function-logs.ts';

const line = (level: string, message: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ level, message, service: 'ballast', sampling_rate: 0, ...fields });
const job = { idempotencyKey: 'chaos-55-2845', lockKey: 'lock#acc-0007' };

describe('chaos function logs', () => {
  it('keeps WARN and above by job and resource, and tells them back for the keys a violation names', () => {
    const logs = new FunctionLogs();
    logs.observe(line('INFO', 'batch done', { records: 10 }), 'worker');
    logs.observe(line('DEBUG', 'job processed', job), 'worker');
    logs.observe('{"_aws":{"CloudWatchMetrics":[]},"JobsProcessed":1}', 'worker');
    logs.observe('a stack trace line, not JSON', 'worker');
    logs.observe(line('WARN', 'could not give the claim back; it expires with its lease', job), 'worker');
    logs.observe(line('ERROR', 'job sent to DLQ', { ...job, reason: 'partner-rejected' }), 'worker');
    logs.observe(line('ERROR', 'cache read failed', { entity: 'account', id: 'acc-0009' }), 'read-api');
    logs.observe(line('WARN', 'job will be retried', { idempotencyKey: 'other', lockKey: 'lock#acc-0001' }), 'worker');

    const told = logs.about({
      orphanClaims: ['idem#chaos-55-2845 lease ended 2026-12-04T00:00:00.000Z (dead letters: partner-rejected)'],
      staleCacheEntries: ['account acc-0009: cached v3, table v4'],
      lostJobs: ['credit nobody-logged on acc-0404'],
    });
    assert.deepEqual(Object.keys(told), ['orphanClaims', 'staleCacheEntries'], 'an invariant whose keys logged nothing is left out');
    const story = told.orphanClaims?.['chaos-55-2845'] ?? [];
    assert.equal(story.length, 2);
    assert.match(story[0] ?? '', /^worker \{"level":"WARN","message":"could not give the claim back/);
    assert.match(story[1] ?? '', /"reason":"partner-rejected"/);
    assert.doesNotMatch(story.join('\n'), /sampling_rate|"service"/, 'fields every line carries are dropped');
    assert.match(told.staleCacheEntries?.['acc-0009']?.[0] ?? '', /^read-api .*cache read failed/);
    // The resource's lines are kept too: a lock's other holders are part of its story
    assert.equal(logs.about({ ledgerMismatches: ['acc-0007: table balance 5 v2, jobs say 10 v3'] }).ledgerMismatches?.['acc-0007']?.length, 2);

    assert.deepEqual(logs.counts(), {
      'worker ERROR job sent to DLQ': 1, 'worker WARN could not give the claim back; it expires with its lease': 1,
      'read-api ERROR cache read failed': 1, 'worker WARN job will be retried': 1,
    });
  });

  it("keeps a busy key's first and latest lines, says how many fell between, and names at most three keys per invariant", () => {
    const logs = new FunctionLogs({ first: 2, last: 3 });
    for (let i = 1; i <= 10; i += 1) logs.observe(line('WARN', `try ${i}`, { idempotencyKey: 'hot' }), 'worker');
    const story = logs.about({ lostJobs: ['credit hot on acc-1'] }).lostJobs?.hot ?? [];
    assert.deepEqual(story.map((text) => text.match(/try \d+|… \d+ lines between/)?.[0]), ['try 1', 'try 2', '… 5 lines between', 'try 8', 'try 9', 'try 10']);

    for (const key of ['k1', 'k2', 'k3', 'k4']) logs.observe(line('ERROR', 'job sent to DLQ', { idempotencyKey: key }), 'worker');
    assert.deepEqual(Object.keys(logs.about({ unexpectedDeadLetters: ['k1: x', 'k2: x', 'k3: x', 'k4: x'] }).unexpectedDeadLetters ?? {}), ['k1', 'k2', 'k3']);
    assert.equal(logs.counts()['worker WARN try 1'], 1);
  });
});
