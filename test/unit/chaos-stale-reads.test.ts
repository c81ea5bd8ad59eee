/**
 * The chaos run's `staleReads`: what readers were answered during the run, held to the
 * invalidations the traces show had finished before each read was sent.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { ATTRIBUTES, SPANS } from '../../shared/tracing/names.ts';
import type { ObservedRead } from '../../local/chaos/readers.ts';
import { CLOCK_MARGIN_MS, findStaleReads, finishedInvalidations, type FinishedInvalidation } from '../../local/chaos/stale-reads.ts';

const read = (version: number, sentAtMs: number, id = 'a-1', source = 'hit'): ObservedRead => ({ entity: 'account', id, sentAtMs, version, source });
const invalidation = (version: number, endedAtMs: number, id = 'a-1'): FinishedInvalidation => ({ entity: 'account', id, version, endedAtMs });

describe('chaos invariant staleReads', () => {
  it('counts a read sent after an invalidation finished and answered older, whatever the cache source', () => {
    const report = findStaleReads([read(1, 1_050), read(2, 1_050), read(1, 1_060, 'a-1', 'miss')], [invalidation(2, 1_000)]);
    assert.equal(report.checked, 3);
    assert.equal(report.stale.length, 2, report.stale.join('\n'));
    assert.match(report.stale[0] ?? '', /account a-1: answered v1 \(hit\) 50 ms after the invalidation of v2 had finished/);
    assert.match(report.stale[1] ?? '', /answered v1 \(miss\)/);
  });

  it('holds a not-found answer to nothing (the cache stores no absence; a deletion is in no job\'s trace)', () => {
    assert.deepEqual(findStaleReads([read(0, 1_070, 'a-1', 'miss')], [invalidation(2, 1_000)]), { checked: 0, stale: [] });
  });

  it('holds no read to an invalidation still running when it was sent, or ending within the clock margin', () => {
    const report = findStaleReads([read(1, 990), read(1, 1_000 + CLOCK_MARGIN_MS - 1)], [invalidation(2, 1_000)]);
    assert.deepEqual(report, { checked: 0, stale: [] });
    assert.equal(findStaleReads([read(1, 1_000 + CLOCK_MARGIN_MS)], [invalidation(2, 1_000)]).stale.length, 1);
  });

  it('holds a read to the newest version finished before it, whatever order the invalidations ran in', () => {
    // v3's invalidation finished before v2's (stream records of one item on two shards' retries).
    const invalidations = [invalidation(2, 2_000), invalidation(3, 1_500)];
    const report = findStaleReads([read(2, 1_600), read(3, 1_600), read(2, 2_100), read(1, 1_400)], invalidations);
    assert.equal(report.checked, 3);
    assert.equal(report.stale.length, 2, report.stale.join('\n'));
    assert.match(report.stale[0] ?? '', /answered v2 \(hit\) 100 ms after the invalidation of v3/);
    assert.match(report.stale[1] ?? '', /answered v2 \(hit\) 600 ms after the invalidation of v3/);
  });

  it("keeps items apart: another item's invalidation holds no read", () => {
    assert.deepEqual(findStaleReads([read(1, 5_000, 'a-2')], [invalidation(9, 1_000, 'a-1')]), { checked: 0, stale: [] });
  });

  it('takes finished invalidations from tombstone spans, not from failed ones or other spans', () => {
    const span = (name: string, code: 'OK' | 'ERROR' | 'UNSET', version: number, spanId: string): SpanRecord => ({
      traceId: '0'.repeat(32), spanId, name, kind: 'INTERNAL', startEpochMs: 990, endEpochMs: 1_000, status: { code },
      attributes: { [ATTRIBUTES.entity]: 'account', [ATTRIBUTES.entityId]: 'a-1', [ATTRIBUTES.version]: version }, events: [], links: [], service: 'invalidator',
    });
    const found = finishedInvalidations([span(SPANS.tombstone, 'UNSET', 2, 'a'), span(SPANS.tombstone, 'ERROR', 3, 'b'), span(SPANS.read, 'UNSET', 4, 'c'), span(SPANS.tombstone, 'OK', 5, 'd')]);
    assert.deepEqual(found, [{ entity: 'account', id: 'a-1', version: 2, endedAtMs: 1_000 }, { entity: 'account', id: 'a-1', version: 5, endedAtMs: 1_000 }]);
  });
});
