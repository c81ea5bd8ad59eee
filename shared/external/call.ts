import { SpanKind, trace } from '@opentelemetry/api';
import { FatalError, FencedError, REASONS, TransientError } from '../errors/index.ts';
import { annotate, ATTRIBUTES, headersOf, inSpan, SPANS } from '../tracing/index.ts';

export interface ExternalCall {
  /** For messages, e.g. `'payment API'`. */
  readonly name: string;
  readonly url: string;
  /** Sent as JSON. */
  readonly body: unknown;
  /** The job's idempotency key, sent as `Idempotency-Key`: a retry after a crash gets the first answer back, not a second effect. */
  readonly idempotencyKey: string;
  /** The claim's fence, sent as `X-Fencing-Token`: the API can refuse a stalled former lock holder. */
  readonly fence: number;
  /** The job's signal (lease lost, invocation ending). */
  readonly signal: AbortSignal;
  /** @default 5_000 */
  readonly timeoutMs?: number;
  /** The workload's reason for a refusal (a 4xx, or a 200 that is not a JSON object): fatal, to the DLQ. */
  readonly rejectedReason: string;
}

/**
 * One POST of an external job to an idempotent API, its answers mapped to ballast's errors:
 * unreachable, 429 and 5xx are transient (retried); 409 is a fence refusal ({@link FencedError}: a
 * newer lock holder exists); any other non-2xx, or a 2xx whose body is not a JSON object, is the
 * workload's `rejectedReason` (fatal). Storing a non-object would make the item unreadable.
 *
 * @returns the answer's JSON object
 */
export function callExternalApi(call: ExternalCall): Promise<Record<string, unknown>> {
  const attributes = { [ATTRIBUTES.externalName]: call.name, 'http.request.method': 'POST', 'url.full': call.url, [ATTRIBUTES.fence]: call.fence };
  return inSpan(SPANS.external, { kind: SpanKind.CLIENT, attributes }, () => post(call));
}

async function post(call: ExternalCall): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(call.url, {
      method: 'POST',
      // The trace travels on (W3C traceparent): the called API's own spans join the job's trace.
      headers: { 'content-type': 'application/json', 'idempotency-key': call.idempotencyKey, 'x-fencing-token': String(call.fence), ...headersOf() },
      body: JSON.stringify(call.body),
      signal: AbortSignal.any([call.signal, AbortSignal.timeout(call.timeoutMs ?? 5_000)]),
    });
  } catch (error) {
    throw new TransientError(REASONS.dependencyUnavailable, `${call.name} unreachable: ${(error as Error).message}`, { cause: error });
  }
  annotate(trace.getActiveSpan(), () => ({ 'http.response.status_code': response.status }));
  if (response.status === 429 || response.status >= 500) {
    throw new TransientError(REASONS.dependencyUnavailable, `${call.name} answered ${response.status}`, { context: { status: response.status } });
  }
  if (response.status === 409) {
    throw new FencedError(`${call.name} refused fencing token ${call.fence}: ${await response.text()}`, { context: { fence: call.fence } });
  }
  if (!response.ok) {
    throw new FatalError(call.rejectedReason, `${call.name} rejected the request: ${response.status} ${await response.text()}`, { context: { status: response.status } });
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new FatalError(call.rejectedReason, `${call.name} answered ${response.status} with a body that is not a JSON object: ${text.slice(0, 120)}`,
      { context: { status: response.status } });
  }
  return body as Record<string, unknown>;
}
