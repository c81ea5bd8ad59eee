import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenLocal, readBytes, type LocalEndpoint } from '../http.ts';
import { invalidSpanRecord, type SpanRecord } from '../../shared/operations/trace-model.ts';
import type { SpanStore } from './store.ts';

/** A body larger than this is refused (a batch of spans is far smaller). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const MAX_RECENT_JOBS = 500;

/**
 * The local span store over HTTP, for the `ballast` CLI and other processes; its URL is the
 * description's `BALLAST_TRACES_URL` (see `TRACES_URL_VARIABLE` in shared/operations/traces.ts):
 *
 * - `GET /traces?key=<jobId | traceId | idempotencyKey>` → `TraceQueryResult` (200, `traces: []` when none);
 * - `GET /jobs?limit=<1–500, default 50>` → `{ jobs: RecentJob[] }`, newest first;
 * - `POST /spans` with `{ "spans": SpanRecord[] }` (`application/json`) → 202 `{ accepted }`: spans a
 *   process other than the local cloud's recorded (its own exporter), each checked for shape.
 */
export function serveTraces(store: SpanStore, port = 0): Promise<LocalEndpoint> {
  return listenLocal((request, response) => handle(store, request, response), port);
}

async function handle(store: SpanStore, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://traces');
  const route = `${request.method} ${url.pathname}`;
  switch (route) {
    case 'GET /traces': {
      const key = url.searchParams.get('key')?.trim() ?? '';
      if (key === '') return json(response, 400, { message: 'name what to trace: ?key=<jobId | traceId | idempotencyKey>' });
      return json(response, 200, store.query(key));
    }
    case 'GET /jobs': {
      const limit = Number(url.searchParams.get('limit') ?? 50);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECENT_JOBS) return json(response, 400, { message: `limit must be an integer from 1 to ${MAX_RECENT_JOBS}` });
      return json(response, 200, { jobs: store.recentJobs(limit) });
    }
    case 'POST /spans': {
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) return json(response, 415, { message: 'send spans as application/json' });
      if (Number(request.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return json(response, 413, { message: `at most ${MAX_BODY_BYTES} bytes of spans per request` });
      const body = await readBytes(request);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        return json(response, 400, { message: 'the body is not JSON' });
      }
      const spans = (parsed as { spans?: unknown } | null)?.spans;
      if (!Array.isArray(spans)) return json(response, 400, { message: 'the body is { "spans": [...] }' });
      for (const [i, span] of spans.entries()) {
        const invalid = invalidSpanRecord(span);
        if (invalid) return json(response, 400, { message: `spans[${i}]: ${invalid}` });
      }
      store.add(spans as SpanRecord[]);
      return json(response, 202, { accepted: spans.length });
    }
    default:
      return json(response, 404, { message: `no ${route}` });
  }
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}
