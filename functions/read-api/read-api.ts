import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { CACHE_ID_RULE, InvalidCacheIdError, isCacheableId, type CachedEntity, type EntityCache, type EntityRead, type ReadSource } from '../../shared/cache/index.ts';
import type { Observability } from '../../shared/observability/index.ts';
import { SpanKind } from '@opentelemetry/api';
import { annotate, ATTRIBUTES, inSpan, spanContextOfTraceparent, SPANS } from '../../shared/tracing/index.ts';

export interface ReadApiDependencies {
  /** Answers reads; every one of its entities with a `route` is served. */
  readonly cache: Pick<EntityCache, 'get' | 'entities'>;
  readonly observability: Observability;
}

/** `/<route>/<one path segment>`; the segment is percent-decoded before it is validated. */
const ITEM_PATH = /^\/([^/]+)\/([^/]+)$/;

type Response = APIGatewayProxyStructuredResultV2;

/**
 * The read API behind a Lambda Function URL: `GET /<route>/{id}` for every cached entity that
 * declares a `route` (e.g. `GET /widgets/{id}`).
 *
 * - 200 with the entity's cached value, header `x-cache: hit | miss | bypass`
 *   (`bypass`: Redis unavailable, answered from the table) and `x-cache-schema: <n>`, the cache
 *   schema version this code reads (during a rollout, which keys answered), and
 *   `x-write-traceparent`: the W3C trace context of the job whose commit wrote the version served
 *   (when that job was traced)
 * - 400 for an id that is not valid (the body says what a valid one looks like)
 * - 404 for an unknown item or any other path; 405 (with `allow: GET`) for other methods
 * - 500 with a generic body for anything unexpected; the details go to the log, never to the caller
 *
 * @example
 * import { createReadApi } from './read-api.ts';
 * export const handler = createReadApi({ cache, observability });
 */
export function createReadApi(deps: ReadApiDependencies): (event: APIGatewayProxyEventV2) => Promise<Response> {
  const { logger, metrics } = deps.observability;
  const routes = new Map<string, CachedEntity>();
  for (const entity of deps.cache.entities.values()) if (entity.route !== undefined) routes.set(entity.route, entity);
  return async function readApi(event) {
    let entity: CachedEntity | undefined;
    try {
      const match = ITEM_PATH.exec(event.rawPath ?? '');
      entity = match ? routes.get(match[1] ?? '') : undefined;
      if (!match || !entity) return json(404, { message: 'not found' });
      const method = event.requestContext?.http?.method;
      if (method !== 'GET') return json(405, { message: `method ${String(method)} is not allowed; use GET` }, { allow: 'GET' });
      const id = decodeSegment(match[2] ?? '');
      if (id === undefined || !isCacheableId(id)) return invalidId(entity);
      const { value, source, writeTrace } = await traceRead(entity, id, deps.cache);
      if (!value) return json(404, { message: `${entity.name} '${id}' not found` }, cacheHeaders(entity, source));
      return json(200, value, { ...cacheHeaders(entity, source), ...(writeTrace ? { 'x-write-traceparent': writeTrace } : {}) });
    } catch (error) {
      if (error instanceof InvalidCacheIdError && entity) return invalidId(entity);
      logger.error('read request failed', { rawPath: event.rawPath, requestId: event.requestContext?.requestId, error: error as Error });
      return json(500, { message: 'internal error' });
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}

/**
 * The read's span: how the cache answered, and — linked, and as `ballast.write.trace_id` — the
 * trace of the job whose commit wrote the version served, so "which write did this read see?"
 * is answered from either side.
 */
function traceRead(entity: CachedEntity, id: string, cache: ReadApiDependencies['cache']): Promise<EntityRead> {
  return inSpan(SPANS.read, { kind: SpanKind.SERVER }, async (span) => {
    const answer = await cache.get(entity, id);
    const written = spanContextOfTraceparent(answer.writeTrace);
    if (written) span.addLink({ context: written });
    annotate(span, () => ({
      [ATTRIBUTES.entity]: entity.name, [ATTRIBUTES.entityId]: id, [ATTRIBUTES.cacheOutcome]: answer.source,
      ...(answer.value ? { [ATTRIBUTES.version]: answer.value.version } : {}),
      ...(written ? { [ATTRIBUTES.writeTraceId]: written.traceId } : {}),
    }));
    return answer;
  });
}

function invalidId(entity: CachedEntity): Response {
  return json(400, { message: `malformed ${entity.name} id: ${CACHE_ID_RULE}` });
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function cacheHeaders(entity: CachedEntity, source: ReadSource): Record<string, string> {
  return { 'x-cache': source, 'x-cache-schema': String(entity.schemaVersion) };
}

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): Response {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
