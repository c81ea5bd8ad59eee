/** Span records for the span store and trace-tree tests (not a test file itself). */
import type { SpanRecord } from '../../shared/operations/trace-model.ts';

export const T0_MS = Date.UTC(2026, 7, 1, 12, 0, 0);

let counter = 0;

/** A 16-hex span id, unique in the run. */
export function spanId(): string {
  counter += 1;
  return counter.toString(16).padStart(16, '0');
}

/** A 32-hex trace id from a short label (same label, same id). */
export function traceId(label: string): string {
  return Buffer.from(label).toString('hex').padEnd(32, '0').slice(0, 32);
}

/** A finished span: `startMs`/`durationMs` relative to {@link T0_MS}. */
export function span(fields: Partial<Omit<SpanRecord, 'startEpochMs' | 'endEpochMs'>> & { name: string; trace: string; startMs?: number; durationMs?: number }): SpanRecord {
  const { trace, startMs = 0, durationMs = 1, ...rest } = fields;
  return {
    traceId: traceId(trace),
    spanId: spanId(),
    kind: 'INTERNAL',
    status: { code: 'UNSET' },
    attributes: {},
    events: [],
    links: [],
    service: 'worker',
    ...rest,
    startEpochMs: T0_MS + startMs,
    endEpochMs: T0_MS + startMs + durationMs,
  };
}
