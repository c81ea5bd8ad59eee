import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { registerGlobalTracing, samplerFromEnvironment } from './sdk.ts';

/** Receives the spans this process finishes. */
export type SpanListener = (spans: readonly SpanRecord[]) => void;

export interface ProcessTracingOptions {
  /**
   * The resource's `service.name` of this process's spans (only the first registration's counts).
   * @default - `OTEL_SERVICE_NAME`, else `local`
   */
  readonly serviceName?: string;
}

/** The process's tracing, shared by everything in it that wants its spans. */
export interface ProcessTracing {
  /** False when another tracer provider was registered first: then no span of this process is collected. */
  readonly registered: boolean;
  /** Adds a listener of the spans this process finishes; returns its removal. */
  subscribe(listener: SpanListener): () => void;
}

/**
 * The OpenTelemetry API's registrations are process-wide, so this is too: one registration per
 * process, made by the first call, whose spans every subscriber (each running local cloud's span
 * store) receives.
 */
let current: ProcessTracing | undefined;

/**
 * Registers the SDK of a local cloud's own process once — the same tracer provider, W3C
 * propagator and AsyncLocalStorage context manager as a sandbox's — so spans made in this process
 * (`npm start`'s demo producer, a test's producer) reach the span stores that subscribe. Every
 * span is sampled unless `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG` say otherwise; a
 * producer's sampling decision travels in its `traceparent` to the functions.
 *
 * @example
 * const unsubscribe = registerProcessTracing().subscribe((spans) => store.add(spans));
 */
export function registerProcessTracing(options: ProcessTracingOptions = {}): ProcessTracing {
  if (current) return current;
  const listeners = new Set<SpanListener>();
  const { registered } = registerGlobalTracing({
    serviceName: options.serviceName ?? (process.env.OTEL_SERVICE_NAME || 'local'),
    sampler: samplerFromEnvironment({ OTEL_TRACES_SAMPLER: 'parentbased_always_on', ...process.env }),
    onEnd: (span) => {
      for (const listener of listeners) listener([span]);
    },
  });
  current = {
    registered,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
  return current;
}
