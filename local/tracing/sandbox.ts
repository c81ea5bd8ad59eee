import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { registerGlobalTracing, samplerFromEnvironment } from './sdk.ts';

export interface SandboxTracingOptions {
  /** The function's environment (the sandbox's `process.env`). */
  readonly environment: Readonly<Record<string, string | undefined>>;
  readonly functionName: string;
  /** Sends finished spans to the local cloud (the worker's port). */
  readonly post: (spans: SpanRecord[]) => void;
  /**
   * Spans held at most between flushes; more are posted at once (a long invocation's spans do not pile up).
   * @default 512
   */
  readonly maxBufferedSpans?: number;
}

/** A sandbox's tracing: the spans finished since the last flush, posted on {@link flush}. */
export interface SandboxTracing {
  /** Posts the spans finished since the last flush, if any (before an invocation's result is posted, as the layer flushes). */
  flush(): void;
}

/**
 * The OpenTelemetry Lambda layer of a local sandbox: when the function's environment names the
 * layer's wrapper (`AWS_LAMBDA_EXEC_WRAPPER`), registers the SDK the layer would — before the
 * handler is imported — with the sampler of `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG` and
 * the service name of `OTEL_SERVICE_NAME` (or the function's name). Without the variable nothing
 * is registered and the API stays a no-op. (The layer's X-Ray propagator, which
 * `OTEL_PROPAGATORS=tracecontext,xray` adds, is not emulated: local context is W3C `traceparent`.)
 *
 * @example
 * const tracing = registerSandboxTracing({ environment: process.env, functionName, post: (spans) => port.postMessage({ spans }) });
 * // ... after the handler returns:
 * tracing?.flush();
 */
export function registerSandboxTracing(options: SandboxTracingOptions): SandboxTracing | undefined {
  if (!options.environment.AWS_LAMBDA_EXEC_WRAPPER) return undefined;
  const maxBufferedSpans = options.maxBufferedSpans ?? 512;
  let buffered: SpanRecord[] = [];
  const flush = () => {
    if (buffered.length === 0) return;
    const spans = buffered;
    buffered = [];
    options.post(spans);
  };
  registerGlobalTracing({
    serviceName: options.environment.OTEL_SERVICE_NAME || options.functionName,
    functionName: options.functionName,
    sampler: samplerFromEnvironment(options.environment),
    onEnd: (span) => {
      buffered.push(span);
      if (buffered.length >= maxBufferedSpans) flush();
    },
  });
  return { flush };
}
