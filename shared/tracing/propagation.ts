import {
  context, isSpanContextValid, propagation, ROOT_CONTEXT, trace, type Context, type SpanContext, type TextMapGetter, type TextMapSetter,
} from '@opentelemetry/api';
import type { SQSRecord } from 'aws-lambda';

/** The message attribute shape both the SQS API and Lambda's event carry string attributes in. */
type StringAttribute = { DataType: 'String'; StringValue: string };

const X_RAY_HEADER = 'x-amzn-trace-id';

/** Reads the keys a propagator asks for from a Lambda SQS record: its attributes, then `AWSTraceHeader`. */
const recordGetter: TextMapGetter<SQSRecord> = {
  keys: (record) => [...Object.keys(record.messageAttributes ?? {}), ...(record.attributes?.AWSTraceHeader ? [X_RAY_HEADER] : [])],
  get: (record, key) => {
    if (key === X_RAY_HEADER) return record.attributes?.AWSTraceHeader;
    return record.messageAttributes?.[key]?.stringValue;
  },
};

const attributeSetter: TextMapSetter<Record<string, StringAttribute>> = {
  set: (attributes, key, value) => {
    attributes[key] = { DataType: 'String', StringValue: value };
  },
};

const stringSetter: TextMapSetter<Record<string, string>> = {
  set: (headers, key, value) => {
    headers[key] = value;
  },
};

/**
 * The trace context of `ctx` as SQS message attributes (`traceparent`, and whatever else the
 * registered propagators write): empty when no propagator is registered or nothing is traced.
 */
export function messageAttributesOf(ctx: Context = context.active()): Record<string, StringAttribute> {
  const attributes: Record<string, StringAttribute> = {};
  propagation.inject(ctx, attributes, attributeSetter);
  return attributes;
}

/** The producer's context carried by a delivered record (W3C `traceparent`, or X-Ray's `AWSTraceHeader`). */
export function contextOfRecord(record: SQSRecord): Context {
  return propagation.extract(ROOT_CONTEXT, record, recordGetter);
}

/** HTTP headers carrying `ctx` (for an external API call). */
export function headersOf(ctx: Context = context.active()): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(ctx, headers, stringSetter);
  return headers;
}

/** The active span's context, if a valid one is active (a span an SDK records, or a remote parent). */
export function activeSpanContext(): SpanContext | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** The W3C `traceparent` of the active span, if a valid one is active (an item's trace attribute). */
export function activeTraceparent(): string | undefined {
  const spanContext = activeSpanContext();
  return spanContext ? formatTraceparent(spanContext) : undefined;
}

/**
 * A context whose parent is the span a stored `traceparent` names (the root context if it names
 * none). Parsed here, not by the registered propagators: a stored value is always W3C.
 */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  const spanContext = spanContextOfTraceparent(traceparent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** The span context a stored `traceparent` names, parsed without a propagator (for span links). */
export function spanContextOfTraceparent(traceparent: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent);
  if (!match) return undefined;
  const spanContext = { traceId: match[1] as string, spanId: match[2] as string, traceFlags: Number.parseInt(match[3] as string, 16), isRemote: true };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

function formatTraceparent(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
