import { context, propagation, trace, TraceFlags, type Attributes, type HrTime } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler,
  type ReadableSpan, type Sampler, type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { SPAN_KINDS, STATUS_CODES, type SpanAttributes, type SpanAttributeValue, type SpanRecord } from '../../shared/operations/trace-model.ts';

export interface GlobalTracingOptions {
  /** The resource's `service.name`. */
  readonly serviceName: string;
  /** Stamped on every span record (a sandbox's function). @default - none */
  readonly functionName?: string;
  readonly sampler: Sampler;
  /** Receives every sampled span when it ends, as a record. */
  readonly onEnd: (span: SpanRecord) => void;
}

/** What {@link registerGlobalTracing} set up. */
export interface GlobalTracing {
  readonly provider: BasicTracerProvider;
  /** False when another tracer provider was registered first (this one then sees no span of the API). */
  readonly registered: boolean;
}

/**
 * Registers, through `@opentelemetry/api`'s global registry, what the OpenTelemetry Lambda layer
 * registers: a tracer provider with `sampler` and a `service.name` resource, the W3C trace-context
 * propagator and an AsyncLocalStorage context manager. Every copy of the API in the thread (a
 * bundled handler's own included) finds them there. Finished spans go to `onEnd` as records.
 */
export function registerGlobalTracing(options: GlobalTracingOptions): GlobalTracing {
  const processor: SpanProcessor = {
    onStart: () => undefined,
    onEnd: (span) => {
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
      options.onEnd(toSpanRecord(span, options.functionName));
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const provider = new BasicTracerProvider({
    sampler: options.sampler,
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [processor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const registered = trace.setGlobalTracerProvider(provider);
  if (registered) {
    context.setGlobalContextManager(contextManager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  } else contextManager.disable();
  return { provider, registered };
}

/**
 * The sampler the standard variables name, as the layer reads them: `OTEL_TRACES_SAMPLER`
 * (`always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off`,
 * `parentbased_traceidratio`; default `parentbased_traceidratio`) and `OTEL_TRACES_SAMPLER_ARG`
 * (the ratio, 0–1; default 1).
 */
export function samplerFromEnvironment(environment: Readonly<Record<string, string | undefined>>): Sampler {
  const arg = Number(environment.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const ratio = environment.OTEL_TRACES_SAMPLER_ARG !== undefined && Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch ((environment.OTEL_TRACES_SAMPLER ?? 'parentbased_traceidratio').trim().toLowerCase()) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    default: return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/** Epoch milliseconds, keeping the sub-millisecond part. */
const epochMs = (time: HrTime) => time[0] * 1_000 + time[1] / 1_000_000;

function attributes(source: Attributes | undefined): SpanAttributes {
  const kept: Record<string, SpanAttributeValue> = {};
  for (const [key, value] of Object.entries(source ?? {})) {
    if (value === undefined || value === null) continue;
    kept[key] = Array.isArray(value) ? (value.filter((item) => item !== null && item !== undefined) as SpanAttributeValue) : value as SpanAttributeValue;
  }
  return kept;
}

/** A finished SDK span as the plain JSON record the span store keeps. */
export function toSpanRecord(span: ReadableSpan, functionName?: string): SpanRecord {
  const { traceId, spanId } = span.spanContext();
  const parentSpanId = span.parentSpanContext?.spanId;
  return {
    traceId,
    spanId,
    ...(parentSpanId ? { parentSpanId } : {}),
    name: span.name,
    kind: SPAN_KINDS[span.kind] ?? 'INTERNAL',
    startEpochMs: epochMs(span.startTime),
    endEpochMs: epochMs(span.endTime),
    status: { code: STATUS_CODES[span.status.code] ?? 'UNSET', ...(span.status.message ? { message: span.status.message } : {}) },
    attributes: attributes(span.attributes),
    events: span.events.map((event) => ({ name: event.name, epochMs: epochMs(event.time), attributes: attributes(event.attributes) })),
    links: span.links.map((link) => ({ traceId: link.context.traceId, spanId: link.context.spanId, attributes: attributes(link.attributes) })),
    service: String(span.resource.attributes['service.name'] ?? functionName ?? 'unknown'),
    ...(functionName ? { functionName } : {}),
  };
}
