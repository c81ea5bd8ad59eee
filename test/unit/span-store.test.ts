import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SpanStore } from '../../local/tracing/store.ts';
import { ATTRIBUTES, SPANS } from '../../shared/tracing/names.ts';
import { span, traceId } from '../helpers/spans.ts';

/** A job's trace: its produce span and a record span under it. */
function job(trace: string, jobId: string, key: string, startMs = 0) {
  const produce = span({ trace, name: SPANS.produce, kind: 'PRODUCER', service: 'producer', startMs, attributes: { [ATTRIBUTES.jobId]: jobId, [ATTRIBUTES.idempotencyKey]: key } });
  const record = span({ trace, name: SPANS.record, kind: 'CONSUMER', parentSpanId: produce.spanId, startMs: startMs + 10, durationMs: 20, attributes: { [ATTRIBUTES.jobId]: jobId, [ATTRIBUTES.jobType]: 'account.credit', [ATTRIBUTES.outcome]: 'processed' } });
  return [produce, record];
}

describe('Class: SpanStore', () => {
  it('finds a trace by its id (W3C or X-Ray spelling), by job id and by idempotency key', () => {
    // GIVEN the spans of two jobs, arriving in any order
    const store = new SpanStore();
    const [produce, record] = job('a', 'job-a', 'key-a');
    store.add([record!, produce!, ...job('b', 'job-b', 'key-b', 100)]);
    // WHEN it is asked by each key THEN the whole trace comes back, spans by start time
    const byJob = store.query('job-a');
    assert.deepEqual(byJob.matchedBy, ['jobId']);
    assert.deepEqual(byJob.traces.map((t) => t.spans.map((s) => s.name)), [[SPANS.produce, SPANS.record]]);
    assert.deepEqual(store.query('key-b').matchedBy, ['idempotencyKey']);
    assert.equal(store.query('key-b').traces[0]?.traceId, traceId('b'));
    const id = traceId('a');
    assert.deepEqual(store.query(id).matchedBy, ['traceId']);
    assert.equal(store.query(`1-${id.slice(0, 8)}-${id.slice(8)}`).traces[0]?.traceId, id, 'X-Ray\'s 1-xxxxxxxx-… spelling');
    assert.deepEqual(store.query('nothing'), { key: 'nothing', matchedBy: [], traces: [] });
  });

  it('returns every trace of an idempotency key two producers sent, oldest first', () => {
    const store = new SpanStore();
    store.add([...job('second', 'job-2', 'same-key', 50), ...job('first', 'job-1', 'same-key', 0)]);
    const result = store.query('same-key');
    assert.deepEqual(result.traces.map((t) => t.traceId), [traceId('first'), traceId('second')]);
  });

  it('returns with a write\'s trace the reads that name it, earliest first, at most maxReadsPerTrace of them', () => {
    const store = new SpanStore({ maxReadsPerTrace: 2 });
    store.add(job('w', 'job-w', 'key-w'));
    const read = (trace: string, startMs: number, writeTraceId = traceId('w')) => span({
      trace, name: SPANS.read, kind: 'SERVER', service: 'read-api', startMs, attributes: { [ATTRIBUTES.writeTraceId]: writeTraceId, [ATTRIBUTES.cacheOutcome]: 'miss' },
    });
    store.add([read('r3', 300), read('r1', 100), read('r2', 200), read('other', 50, traceId('elsewhere'))]);
    const [view] = store.query('job-w').traces;
    assert.deepEqual(view?.reads.map((r) => r.traceId), [traceId('r1'), traceId('r2')]);
    assert.equal(view?.readCount, 3);
  });

  it('keeps a span posted twice once, and counts what passes maxSpansPerTrace instead of keeping it', () => {
    const store = new SpanStore({ maxSpansPerTrace: 2 });
    const spans = job('d', 'job-d', 'key-d');
    store.add(spans);
    store.add(spans);
    store.add([span({ trace: 'd', name: SPANS.commit })]);
    assert.equal(store.query('job-d').traces[0]?.spans.length, 2);
  });

  it('is bounded: past maxTraces the least recently updated trace is dropped with its index entries', () => {
    // GIVEN a store of two traces
    const store = new SpanStore({ maxTraces: 2 });
    store.add(job('1', 'job-1', 'key-1'));
    store.add(job('2', 'job-2', 'key-2'));
    // WHEN trace 1 gets a late span and a third trace arrives
    store.add([span({ trace: '1', name: SPANS.streamRecord, startMs: 500 })]);
    store.add(job('3', 'job-3', 'key-3'));
    // THEN trace 2 is gone, from every index
    assert.equal(store.traceCount, 2);
    assert.deepEqual(store.query('job-2').traces, []);
    assert.deepEqual(store.query('key-2').matchedBy, []);
    assert.equal(store.query('job-1').traces.length, 1);
    assert.equal(store.query('job-3').traces.length, 1);
  });

  it('lists recent jobs, newest first, with their type, latest outcome and whether a span failed', () => {
    const store = new SpanStore();
    store.add(job('x', 'job-x', 'key-x'));
    store.add([...job('y', 'job-y', 'key-y', 10), span({ trace: 'y', name: SPANS.commit, status: { code: 'ERROR', message: 'refused' } })]);
    const jobs = store.recentJobs(10);
    assert.deepEqual(jobs.map((j) => [j.jobId, j.jobType, j.outcome, j.error]), [['job-y', 'account.credit', 'processed', true], ['job-x', 'account.credit', 'processed', false]]);
    assert.equal(store.recentJobs(1).length, 1);
  });

  it('refuses a bound that is not a positive integer, naming it', () => {
    assert.throws(() => new SpanStore({ maxTraces: 0 }), /maxTraces must be an integer >= 1, got 0/);
  });
});
