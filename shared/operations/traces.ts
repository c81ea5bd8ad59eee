/**
 * The spans of a job, a trace or an idempotency key: what `ballast trace` and the console show.
 * Locally they come from the local cloud's span store, over the endpoint it publishes in its
 * description (`BALLAST_TRACES_URL`); deployed environments send their spans to X-Ray, which this
 * module does not read yet.
 */
import type { OpsContext } from './context.ts';
import { StackUnreachableError } from './errors.ts';
import type { RecentJob, TraceQueryResult } from './trace-model.ts';

export {
  normalizeTraceId, invalidSpanRecord, SPAN_KINDS, STATUS_CODES,
  type SpanRecord, type SpanAttributes, type SpanAttributeValue, type SpanKindName, type StatusCodeName,
  type TraceView, type TraceQueryResult, type TraceMatch, type RecentJob,
} from './trace-model.ts';
export { layoutTrace, formatTraces, formatMs, type TraceLayout, type TraceRow } from './trace-tree.ts';

/**
 * The variable a local cloud's description sets to its span endpoint's URL (`.ballast/local.json`
 * `environment`, applied to the process by `resolveStack`). The endpoint answers:
 *
 * - `GET <url>/traces?key=<jobId | traceId | idempotencyKey>`: a {@link TraceQueryResult};
 * - `GET <url>/jobs?limit=<n>`: `{ jobs: RecentJob[] }`, newest first;
 * - `POST <url>/spans` with `{ spans: SpanRecord[] }` (JSON): adds another process's spans.
 */
export const TRACES_URL_VARIABLE = 'BALLAST_TRACES_URL';

/** This environment's spans cannot be read: no span endpoint locally, or a deployed env (not read yet). */
export class TracesUnavailableError extends StackUnreachableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TracesUnavailableError';
  }
}

export interface FindTracesOptions {
  /** Stop waiting for the span endpoint after this long. @default 10_000 */
  readonly timeoutMs?: number;
}

/**
 * Every trace of `key` — a job id, a trace id (32 hex digits or X-Ray's `1-…-…`) or an
 * idempotency key — with the reads that served each trace's write.
 *
 * @throws TracesUnavailableError when the environment's spans cannot be read
 * @example
 * const context = createContext(await resolveStack({ env: 'local' }));
 * const { traces } = await findTraces(context, 'job-42');
 */
export async function findTraces(context: OpsContext, key: string, options: FindTracesOptions = {}): Promise<TraceQueryResult> {
  return getJson<TraceQueryResult>(context, `/traces?${new URLSearchParams({ key })}`, options);
}

/**
 * The jobs the span store has spans of, newest first (at most `limit`).
 * @throws TracesUnavailableError when the environment's spans cannot be read
 */
export async function recentTracedJobs(context: OpsContext, limit = 50, options: FindTracesOptions = {}): Promise<readonly RecentJob[]> {
  return (await getJson<{ jobs: RecentJob[] }>(context, `/jobs?${new URLSearchParams({ limit: String(limit) })}`, options)).jobs;
}

/** The span endpoint of the context's environment. */
export function tracesUrl(context: OpsContext): string {
  if (context.stack.source !== 'local-file') {
    throw new TracesUnavailableError(
      `ballast trace reads the local cloud's spans only; env ${context.stack.env} sends its spans to AWS X-Ray through the OpenTelemetry layer: search there (or in CloudWatch Transaction Search) for the span attribute ballast.job.id or ballast.idempotency_key, or open the trace id`,
    );
  }
  const url = process.env[TRACES_URL_VARIABLE];
  if (!url) {
    throw new TracesUnavailableError(`the local cloud publishes no span endpoint (${TRACES_URL_VARIABLE} is not in its description): restart it with 'npm start' from this version`);
  }
  return url.replace(/\/+$/, '');
}

async function getJson<T>(context: OpsContext, path: string, options: FindTracesOptions): Promise<T> {
  const url = `${tracesUrl(context)}${path}`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
  } catch (error) {
    throw new TracesUnavailableError(`cannot reach the local span endpoint ${url} (${(error as Error).message}): is the local cloud still running?`, { cause: error });
  }
  const text = await response.text();
  if (!response.ok) throw new TracesUnavailableError(`the local span endpoint answered ${response.status} to ${path}: ${text.slice(0, 200)}`);
  return JSON.parse(text) as T;
}
