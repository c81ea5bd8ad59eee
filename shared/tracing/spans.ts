import { SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanOptions } from '@opentelemetry/api';
import { ATTRIBUTES } from './names.ts';

/**
 * ballast's tracer. Without an SDK registered (the AWS layer, the local cloud's sandboxes) every
 * span it makes is a non-recording no-op: the API costs a few allocations per span, nothing more.
 */
export function tracer() {
  return trace.getTracer('ballast');
}

/**
 * Runs `body` inside a new active span and ends it: a throw is recorded on the span (status
 * ERROR, the exception as an event, its reason code as `ballast.reason`) and rethrown.
 */
export async function inSpan<T>(name: string, options: SpanOptions & { readonly parent?: Context }, body: (span: Span) => Promise<T>): Promise<T> {
  const { parent, ...spanOptions } = options;
  const run = async (span: Span): Promise<T> => {
    try {
      return await body(span);
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  };
  return parent ? tracer().startActiveSpan(name, spanOptions, parent, run) : tracer().startActiveSpan(name, spanOptions, run);
}

/** Marks a span failed by `error`: status ERROR with its message, the exception event, its reason code. */
export function failSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const e = error instanceof Error ? error : new Error(String(error));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  const reason = (error as { reason?: unknown }).reason;
  if (typeof reason === 'string') span.setAttribute(ATTRIBUTES.reason, reason);
}

/** Sets attributes only on a recording span (skips building values nobody records). */
export function annotate(span: Span | undefined, attributes: () => Attributes): void {
  if (span?.isRecording()) span.setAttributes(attributes());
}
