import { ATTRIBUTES, SPANS } from '../tracing/names.ts';
import type { SpanAttributes, SpanAttributeValue, SpanRecord, TraceQueryResult, TraceView } from './trace-model.ts';

/** One line of a trace's tree: a span with where it sits and what to say about it. */
export interface TraceRow {
  readonly traceId: string;
  readonly spanId: string;
  /** 0 for a root (a span without a parent, with a parent not collected, or a read). */
  readonly depth: number;
  /** The tree's drawing for text output, e.g. `│  ├─ ` (empty for a root). */
  readonly prefix: string;
  readonly name: string;
  /** Short name: `record`, `queue wait`, ... */
  readonly label: string;
  /** The key attributes, ready to print: `attempt 1`, `outcome processed`, `fence 4`, ... */
  readonly details: readonly string[];
  /** From the start of the trace's earliest span. */
  readonly offsetMs: number;
  readonly durationMs: number;
  readonly service: string;
  /** Whether it ran in another service than its parent row (or is a root). */
  readonly serviceChanged: boolean;
  /** Present when the span's status is ERROR: its message, or its exception's. */
  readonly error?: string;
  /** Its parent span was not collected (another process, sampled out, or dropped). */
  readonly orphan: boolean;
  /** A span of another trace that read this trace's write (`ballast.write.trace_id`). */
  readonly read: boolean;
}

/** A trace laid out for display. */
export interface TraceLayout {
  readonly traceId: string;
  readonly startEpochMs: number;
  /** From the earliest start to the latest end, reads included. */
  readonly durationMs: number;
  readonly spanCount: number;
  readonly readCount: number;
  /** The job ids its spans name. */
  readonly jobIds: readonly string[];
  readonly rows: readonly TraceRow[];
}

const LABELS: Readonly<Record<string, string>> = {
  [SPANS.produce]: 'produce',
  [SPANS.queueWait]: 'queue wait',
  [SPANS.batch]: 'batch',
  [SPANS.record]: 'record',
  [SPANS.claim]: 'claim',
  [SPANS.lockWait]: 'lock wait',
  [SPANS.external]: 'external',
  [SPANS.commit]: 'commit',
  [SPANS.dlqSend]: 'dlq send',
  [SPANS.visibilityBackoff]: 'visibility backoff',
  [SPANS.streamRecord]: 'stream record',
  [SPANS.tombstone]: 'tombstone',
  [SPANS.read]: 'read',
};

const list = (value: SpanAttributeValue) => (Array.isArray(value) ? value.join(',') : String(value));

/** The attributes shown inline, in this order, and how (the job's id and type only where they change down the tree). */
const DETAILS: readonly (readonly [string, (value: SpanAttributeValue, attributes: SpanAttributes) => string])[] = [
  [ATTRIBUTES.attempt, (v) => `attempt ${String(v)}`],
  [ATTRIBUTES.outcome, (v) => `outcome ${String(v)}`],
  [ATTRIBUTES.reason, (v) => `reason ${String(v)}`],
  [ATTRIBUTES.commitKind, (v) => String(v)],
  [ATTRIBUTES.fence, (v) => `fence ${String(v)}`],
  [ATTRIBUTES.cancellationReasons, (v) => `cancellation reasons [${list(v)}]`],
  [ATTRIBUTES.externalName, (v) => String(v)],
  [ATTRIBUTES.lockKeys, (v) => `locks ${list(v)}`],
  [ATTRIBUTES.backoffSeconds, (v) => `backoff ${String(v)} s`],
  [ATTRIBUTES.streamEventName, (v) => String(v)],
  [ATTRIBUTES.entity, (v, a) => (a[ATTRIBUTES.entityId] === undefined ? String(v) : `${String(v)} ${String(a[ATTRIBUTES.entityId])}`)],
  [ATTRIBUTES.version, (v) => `v${String(v)}`],
  [ATTRIBUTES.invalidationLagMs, (v) => `lag ${formatMs(Number(v))}`],
  [ATTRIBUTES.cacheOutcome, (v) => `cache ${String(v)}`],
];

/** `0.42 ms`, `12.3 ms`, `1.25 s`, `75.0 s`. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  const abs = Math.abs(ms);
  if (abs < 10) return `${ms.toFixed(2)} ms`;
  if (abs < 1_000) return `${ms.toFixed(1)} ms`;
  if (abs < 10_000) return `${(ms / 1_000).toFixed(2)} s`;
  return `${(ms / 1_000).toFixed(1)} s`;
}

function errorOf(span: SpanRecord): string | undefined {
  if (span.status.code !== 'ERROR') return undefined;
  const exception = span.events.find((event) => event.name === 'exception');
  return span.status.message || (exception ? String(exception.attributes['exception.message'] ?? exception.attributes['exception.type'] ?? '') : '');
}

/** What a row shows only where it changes down the tree. */
interface Inherited {
  readonly service: string;
  readonly jobId?: string;
  readonly jobType?: string;
}

function inherited(span: SpanRecord, parent: Inherited | undefined): Inherited {
  const jobId = span.attributes[ATTRIBUTES.jobId];
  const jobType = span.attributes[ATTRIBUTES.jobType];
  return {
    service: span.service,
    ...(jobId === undefined ? (parent?.jobId === undefined ? {} : { jobId: parent.jobId }) : { jobId: String(jobId) }),
    ...(jobType === undefined ? (parent?.jobType === undefined ? {} : { jobType: parent.jobType }) : { jobType: String(jobType) }),
  };
}

const byStart = (a: SpanRecord, b: SpanRecord) => a.startEpochMs - b.startEpochMs || a.endEpochMs - b.endEpochMs;

/**
 * Lays a trace out as a tree: each span under its parent, siblings by start time; spans whose
 * parent was not collected at the root; then the reads that served its write, as roots.
 * @example
 * for (const row of layoutTrace(view).rows) console.log(`${row.prefix}${row.label} ${row.details.join(', ')}`);
 */
export function layoutTrace(view: TraceView): TraceLayout {
  const spans = [...view.spans].sort(byStart);
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string, SpanRecord[]>();
  const roots: SpanRecord[] = [];
  for (const span of spans) {
    if (span.parentSpanId !== undefined && ids.has(span.parentSpanId) && span.parentSpanId !== span.spanId) {
      const siblings = children.get(span.parentSpanId) ?? [];
      siblings.push(span);
      children.set(span.parentSpanId, siblings);
    } else roots.push(span);
  }
  const reads = [...view.reads].sort(byStart);
  const all = [...spans, ...reads];
  const startEpochMs = all.length === 0 ? 0 : Math.min(...all.map((span) => span.startEpochMs));
  const endEpochMs = all.length === 0 ? 0 : Math.max(...all.map((span) => span.endEpochMs));
  const rows: TraceRow[] = [];
  const visited = new Set<string>();
  const row = (span: SpanRecord, depth: number, prefix: string, parent: Inherited | undefined, read: boolean): TraceRow => {
    const details = DETAILS.flatMap(([key, show]) => (span.attributes[key] === undefined ? [] : [show(span.attributes[key] as SpanAttributeValue, span.attributes)]));
    const { jobId, jobType } = inherited(span, undefined);
    if (jobType !== undefined && jobType !== parent?.jobType) details.unshift(jobType);
    if (jobId !== undefined && jobId !== parent?.jobId) details.unshift(`job ${jobId}`);
    const error = errorOf(span);
    return {
      traceId: span.traceId, spanId: span.spanId, depth, prefix, name: span.name,
      label: LABELS[span.name] ?? span.name.replace(/^ballast\./, ''),
      details, offsetMs: span.startEpochMs - startEpochMs, durationMs: span.endEpochMs - span.startEpochMs,
      service: span.service, serviceChanged: span.service !== parent?.service,
      ...(error === undefined ? {} : { error }),
      orphan: !read && span.parentSpanId !== undefined && !ids.has(span.parentSpanId), read,
    };
  };
  const walk = (span: SpanRecord, depth: number, indent: string, last: boolean, parent: Inherited | undefined) => {
    if (visited.has(span.spanId)) return;
    visited.add(span.spanId);
    rows.push(row(span, depth, depth === 0 ? '' : `${indent}${last ? '└─ ' : '├─ '}`, parent, false));
    const kids = children.get(span.spanId) ?? [];
    const here = inherited(span, parent);
    const childIndent = depth === 0 ? '' : `${indent}${last ? '   ' : '│  '}`;
    kids.forEach((kid, i) => walk(kid, depth + 1, childIndent, i === kids.length - 1, here));
  };
  for (const root of roots) walk(root, 0, '', true, undefined);
  // A parent cycle (bogus data) leaves spans unreached: they are shown as roots rather than lost.
  for (const span of spans) if (!visited.has(span.spanId)) walk(span, 0, '', true, undefined);
  reads.forEach((read, i) => rows.push({ ...row(read, 0, '', undefined, true), label: i === 0 ? 'first read' : 'read' }));
  const jobIds = [...new Set(spans.flatMap((span) => (span.attributes[ATTRIBUTES.jobId] === undefined ? [] : [String(span.attributes[ATTRIBUTES.jobId])])))];
  return {
    traceId: view.traceId, startEpochMs, durationMs: endEpochMs - startEpochMs, spanCount: spans.length, readCount: view.readCount, jobIds, rows,
  };
}

/** Cuts `text` to `width` columns, marking the cut. */
function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * The text `ballast trace` prints: per trace a header, then one line per span with its offset
 * from the trace's start, its duration, its place in the tree, its key attributes (and an error's
 * message) and its service where that changes; a span with error status marked `✗`; then the reads of its write, each with its own trace id.
 * Every line fits `widthColumns` (cut with `…`).
 * @example
 * for (const line of formatTraces(result)) process.stdout.write(`${line}\n`);
 */
export function formatTraces(result: TraceQueryResult, widthColumns = 100): string[] {
  const lines: string[] = [];
  result.traces.forEach((view, index) => {
    const layout = layoutTrace(view);
    if (index > 0) lines.push('');
    const reads = layout.readCount === 0 ? '' : `, ${layout.readCount} read${layout.readCount === 1 ? '' : 's'}`;
    lines.push(fit(`trace ${layout.traceId}  ${layout.spanCount} span${layout.spanCount === 1 ? '' : 's'}${reads}, ${formatMs(layout.durationMs)}  at ${new Date(layout.startEpochMs).toISOString()}`, widthColumns));
    lines.push(fit(`${'offset'.padStart(10)} ${'duration'.padStart(9)}  span`, widthColumns));
    for (const row of layout.rows) {
      const mark = row.error === undefined ? '' : '✗ ';
      const service = row.serviceChanged ? `  [${row.service}]` : '';
      const details = row.details.length === 0 ? '' : `  ${row.details.join(', ')}`;
      // The error's message, unless a detail says it already (a reason code).
      const said = row.error === undefined || row.error === '' || row.details.some((detail) => detail.endsWith(` ${row.error}`));
      const error = said ? '' : `  error: ${row.error}`;
      const orphan = row.orphan ? '  (parent not collected)' : '';
      // What is cut first at the width: the service, then the orphan note.
      lines.push(fit(`${`+${formatMs(row.offsetMs)}`.padStart(10)} ${formatMs(row.durationMs).padStart(9)}  ${row.prefix}${mark}${row.label}${details}${error}${orphan}${service}`, widthColumns));
      if (row.read) lines.push(fit(`${''.padStart(22)}  (its own trace: ${row.traceId})`, widthColumns));
    }
    const more = layout.readCount - view.reads.length;
    if (more > 0) lines.push(fit(`${''.padStart(22)}… and ${more} more read${more === 1 ? '' : 's'} of this write's version`, widthColumns));
  });
  return lines;
}
