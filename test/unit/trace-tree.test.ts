import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatMs, formatTraces, layoutTrace } from '../../shared/operations/trace-tree.ts';
import type { TraceView } from '../../shared/operations/trace-model.ts';
import { ATTRIBUTES as A, SPANS as S } from '../../shared/tracing/names.ts';
import { span, traceId } from '../helpers/spans.ts';

/** A transfer job: a retried delivery whose external call failed, then the one that committed, its invalidation and a read. */
function transferTrace(): TraceView {
  const t = 'job-7';
  const produce = span({ trace: t, name: S.produce, kind: 'PRODUCER', service: 'demo-producer', durationMs: 1.2, attributes: { [A.jobId]: 'job-7', [A.jobType]: 'account.transfer', [A.idempotencyKey]: 'k-7' } });
  const first = span({ trace: t, name: S.record, kind: 'CONSUMER', parentSpanId: produce.spanId, startMs: 41.5, durationMs: 30, status: { code: 'ERROR', message: 'dependency-unavailable' }, attributes: { [A.jobId]: 'job-7', [A.jobType]: 'account.transfer', [A.attempt]: 1, [A.outcome]: 'retry', [A.reason]: 'dependency-unavailable' } });
  const wait = span({ trace: t, name: S.queueWait, parentSpanId: first.spanId, startMs: 1.2, durationMs: 40.3 });
  const external = span({ trace: t, name: S.external, kind: 'CLIENT', parentSpanId: first.spanId, startMs: 45, durationMs: 20, status: { code: 'ERROR' }, events: [{ name: 'exception', epochMs: 0, attributes: { 'exception.message': 'connect ECONNREFUSED' } }], attributes: { [A.externalName]: 'partner.transfer' } });
  const second = span({ trace: t, name: S.record, kind: 'CONSUMER', parentSpanId: produce.spanId, startMs: 1100, durationMs: 60, attributes: { [A.jobId]: 'job-7', [A.jobType]: 'account.transfer', [A.attempt]: 2, [A.outcome]: 'processed' } });
  const claim = span({ trace: t, name: S.claim, parentSpanId: second.spanId, startMs: 1101, durationMs: 4.2, attributes: { [A.fence]: 3, [A.lockKeys]: ['acc-1', 'acc-2'] } });
  const commit = span({ trace: t, name: S.commit, parentSpanId: second.spanId, startMs: 1140, durationMs: 12.5, attributes: { [A.outcome]: 'committed', [A.fence]: 3, [A.cancellationReasons]: ['None', 'ConditionalCheckFailed'] } });
  const stream = span({ trace: t, name: S.streamRecord, kind: 'CONSUMER', service: 'invalidator', parentSpanId: commit.spanId, startMs: 1400, durationMs: 3, attributes: { [A.entity]: 'account', [A.entityId]: 'acc-1', [A.version]: 5, [A.invalidationLagMs]: 248.2 } });
  const tombstone = span({ trace: t, name: S.tombstone, service: 'invalidator', parentSpanId: stream.spanId, startMs: 1401, durationMs: 0.8 });
  const orphan = span({ trace: t, name: S.visibilityBackoff, parentSpanId: 'ffffffffffffffff', startMs: 70, durationMs: 1, attributes: { [A.backoffSeconds]: 1 } });
  const read = span({ trace: 'read', name: S.read, kind: 'SERVER', service: 'read-api', startMs: 1500, durationMs: 2.1, attributes: { [A.writeTraceId]: traceId(t), [A.cacheOutcome]: 'miss', [A.version]: 5 } });
  // In arrival order, not start order: the layout sorts.
  return { traceId: traceId(t), spans: [tombstone, second, produce, first, wait, external, claim, commit, stream, orphan], reads: [read], readCount: 3 };
}

describe('Function: layoutTrace', () => {
  it('puts each span under its parent, siblings by start time, and a span whose parent is missing at the root', () => {
    const rows = layoutTrace(transferTrace()).rows;
    assert.deepEqual(rows.map((row) => `${'  '.repeat(row.depth)}${row.label}`), [
      'produce', '  record', '    queue wait', '    external', '  record', '    claim', '    commit', '      stream record', '        tombstone',
      'visibility backoff', 'first read',
    ]);
    const orphan = rows.find((row) => row.label === 'visibility backoff');
    assert.equal(orphan?.orphan, true);
    assert.equal(rows.find((row) => row.label === 'produce')?.orphan, false);
  });

  it('measures offsets from the trace\'s earliest start and marks errors with their message or exception', () => {
    const layout = layoutTrace(transferTrace());
    assert.ok(Math.abs(layout.durationMs - 1502.1) < 0.001, `${layout.durationMs}`);
    const [, first, , external] = layout.rows;
    assert.deepEqual([first?.offsetMs, first?.durationMs, first?.error], [41.5, 30, 'dependency-unavailable']);
    assert.equal(external?.error, 'connect ECONNREFUSED');
    assert.equal(layout.rows.find((row) => row.label === 'claim')?.error, undefined);
  });

  it('shows a job\'s id and type where they change down the tree, not on every span', () => {
    const rows = layoutTrace(transferTrace()).rows;
    assert.deepEqual(rows[0]?.details, ['job job-7', 'account.transfer']);
    assert.deepEqual(rows[1]?.details, ['attempt 1', 'outcome retry', 'reason dependency-unavailable']);
  });

  it('still shows every span when parent links form a cycle (bogus data)', () => {
    const a = span({ trace: 'cycle', name: 'a' });
    const b = span({ trace: 'cycle', name: 'b', parentSpanId: a.spanId });
    const rows = layoutTrace({ traceId: traceId('cycle'), spans: [{ ...a, parentSpanId: b.spanId }, b], reads: [], readCount: 0 }).rows;
    assert.deepEqual(rows.map((row) => row.label).sort(), ['a', 'b']);
  });
});

describe('Function: formatTraces', () => {
  it('prints the tree with offsets, durations, key attributes, error marks and the service where it changes', () => {
    const lines = formatTraces({ key: 'job-7', matchedBy: ['jobId'], traces: [transferTrace()] });
    assert.equal(lines[0], `trace ${traceId('job-7')}  10 spans, 3 reads, 1.50 s  at 2026-08-01T12:00:00.000Z`);
    assert.deepEqual(lines.slice(1, 12), [
      '    offset  duration  span',
      '  +0.00 ms   1.20 ms  produce  job job-7, account.transfer  [demo-producer]',
      '  +41.5 ms   30.0 ms  ├─ ✗ record  attempt 1, outcome retry, reason dependency-unavailable  [worker]',
      '  +1.20 ms   40.3 ms  │  ├─ queue wait',
      '  +45.0 ms   20.0 ms  │  └─ ✗ external  partner.transfer  error: connect ECONNREFUSED',
      '   +1.10 s   60.0 ms  └─ record  attempt 2, outcome processed  [worker]',
      '   +1.10 s   4.20 ms     ├─ claim  fence 3, locks acc-1,acc-2',
      '   +1.14 s   12.5 ms     └─ commit  outcome committed, fence 3, cancellation reasons [None,ConditionalCheckFailed]',
      '   +1.40 s   3.00 ms        └─ stream record  account acc-1, v5, lag 248.2 ms  [invalidator]',
      '   +1.40 s   0.80 ms           └─ tombstone',
      '  +70.0 ms   1.00 ms  visibility backoff  backoff 1 s  (parent not collected)  [worker]',
    ].map((line) => (line.length > 100 ? `${line.slice(0, 99)}…` : line)));
    assert.match(lines[12] ?? '', /^ {3}\+1\.50 s {3}2\.10 ms {2}first read {2}v5, cache miss {2}\[read-api\]$/);
    assert.equal(lines[13]?.trim(), `(its own trace: ${traceId('read')})`);
    assert.equal(lines[14]?.trim(), '… and 2 more reads of this write\'s version');
  });

  it('fits every line in the width, and prints several traces one after another', () => {
    const other: TraceView = { traceId: traceId('other'), spans: [span({ trace: 'other', name: S.produce, attributes: { [A.jobId]: 'job-8' } })], reads: [], readCount: 0 };
    for (const width of [100, 60]) {
      const lines = formatTraces({ key: 'k', matchedBy: ['idempotencyKey'], traces: [transferTrace(), other] }, width);
      for (const line of lines) assert.ok(line.length <= width, `${line.length} > ${width}: ${line}`);
      const headers = lines.filter((line) => line.startsWith('trace '));
      assert.equal(headers.length, 2);
      assert.equal(lines[lines.indexOf(headers[1] ?? '') - 1], '', 'a blank line between traces');
    }
  });

  it('formats durations with their unit, keeping sub-millisecond precision', () => {
    assert.deepEqual([0.42, 12.34, 1_250, 75_000].map(formatMs), ['0.42 ms', '12.3 ms', '1.25 s', '75.0 s']);
  });
});
