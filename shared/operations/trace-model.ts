/**
 * The span model `ballast trace`, the local span store and the console share: one finished
 * OpenTelemetry span as plain JSON, whichever process (a Lambda sandbox, the local cloud's own
 * process) recorded it.
 */

/** A span attribute's value, as OpenTelemetry allows it (arrays are homogeneous). */
export type SpanAttributeValue = string | number | boolean | readonly string[] | readonly number[] | readonly boolean[];
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>;

/** OpenTelemetry's `SpanKind`, by name. */
export const SPAN_KINDS = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'] as const;
export type SpanKindName = (typeof SPAN_KINDS)[number];

/** OpenTelemetry's `SpanStatusCode`, by name. */
export const STATUS_CODES = ['UNSET', 'OK', 'ERROR'] as const;
export type StatusCodeName = (typeof STATUS_CODES)[number];

/** One finished span. Times are epoch milliseconds with sub-millisecond fractions. */
export interface SpanRecord {
  /** 32 lowercase hex digits (W3C trace-context). */
  readonly traceId: string;
  /** 16 lowercase hex digits. */
  readonly spanId: string;
  /** The parent's span id; absent on a root span. The parent may be in another process. */
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: SpanKindName;
  readonly startEpochMs: number;
  readonly endEpochMs: number;
  readonly status: { readonly code: StatusCodeName; readonly message?: string };
  readonly attributes: SpanAttributes;
  readonly events: readonly { readonly name: string; readonly epochMs: number; readonly attributes: SpanAttributes }[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string; readonly attributes: SpanAttributes }[];
  /** The resource's `service.name` (`OTEL_SERVICE_NAME`, or the function's name). */
  readonly service: string;
  /** The Lambda function whose sandbox recorded it; absent for a span of a plain process. */
  readonly functionName?: string;
}

/** One trace as a query returns it. */
export interface TraceView {
  readonly traceId: string;
  /** Every collected span of the trace, by start time. */
  readonly spans: readonly SpanRecord[];
  /**
   * Spans of other traces that name this one as the write whose version they served
   * (`ballast.write.trace_id`, i.e. the reads of what this trace committed), earliest first; at
   * most a few.
   */
  readonly reads: readonly SpanRecord[];
  /** How many such reads the store holds (`reads` may show fewer). */
  readonly readCount: number;
}

/** How a query key matched. */
export type TraceMatch = 'traceId' | 'jobId' | 'idempotencyKey';

export interface TraceQueryResult {
  readonly key: string;
  /** What the key was found as (several, if e.g. a job id is also used as an idempotency key). */
  readonly matchedBy: readonly TraceMatch[];
  /** The matching traces, oldest first (two producers of one idempotency key: two traces). */
  readonly traces: readonly TraceView[];
}

/** A job the store has spans of, for a "recent jobs" list. */
export interface RecentJob {
  readonly jobId: string;
  readonly jobType?: string;
  readonly traceId: string;
  /** When its earliest span started. */
  readonly startEpochMs: number;
  /** The outcome of its latest record span, when the worker reported one. */
  readonly outcome?: string;
  /** Whether any of its spans ended with an error status. */
  readonly error: boolean;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const X_RAY_TRACE_ID = /^1-([0-9a-f]{8})-([0-9a-f]{24})$/;

/**
 * A W3C trace id from either spelling an operator may paste: 32 hex digits, or X-Ray's
 * `1-<8 hex>-<24 hex>`; undefined if `text` is neither.
 * @example
 * normalizeTraceId('1-5759e988-bd862e3fe1be46a994272793'); // '5759e988bd862e3fe1be46a994272793'
 */
export function normalizeTraceId(text: string): string | undefined {
  const lower = text.trim().toLowerCase();
  if (TRACE_ID.test(lower)) return lower;
  const xray = X_RAY_TRACE_ID.exec(lower);
  return xray ? `${xray[1]}${xray[2]}` : undefined;
}

/**
 * Whether `value` has the shape of a {@link SpanRecord} (what the local span endpoint accepts
 * from another process); names the first field that does not fit, or undefined when it fits.
 */
export function invalidSpanRecord(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return 'a span is a JSON object';
  const span = value as Record<string, unknown>;
  if (typeof span.traceId !== 'string' || !TRACE_ID.test(span.traceId)) return 'traceId: 32 lowercase hex digits';
  if (typeof span.spanId !== 'string' || !/^[0-9a-f]{16}$/.test(span.spanId)) return 'spanId: 16 lowercase hex digits';
  if (span.parentSpanId !== undefined && (typeof span.parentSpanId !== 'string' || !/^[0-9a-f]{16}$/.test(span.parentSpanId))) return 'parentSpanId: 16 lowercase hex digits, or absent';
  if (typeof span.name !== 'string' || span.name === '') return 'name: a non-empty string';
  if (!SPAN_KINDS.includes(span.kind as SpanKindName)) return `kind: one of ${SPAN_KINDS.join(', ')}`;
  if (!Number.isFinite(span.startEpochMs) || !Number.isFinite(span.endEpochMs)) return 'startEpochMs, endEpochMs: numbers';
  const status = span.status as { code?: unknown } | null;
  if (status === null || typeof status !== 'object' || !STATUS_CODES.includes(status.code as StatusCodeName)) return `status.code: one of ${STATUS_CODES.join(', ')}`;
  if (span.attributes === null || typeof span.attributes !== 'object' || Array.isArray(span.attributes)) return 'attributes: an object';
  if (!Array.isArray(span.events) || !Array.isArray(span.links)) return 'events, links: arrays';
  if (typeof span.service !== 'string') return 'service: a string';
  return undefined;
}
