import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ACCOUNT_ID_RULE, InvalidAccountIdError, isCacheableAccountId, type AccountCache, type ReadSource } from '../../shared/cache/index.ts';
import type { Observability } from '../../shared/observability/index.ts';

export interface ReadApiDependencies {
  /** Answers reads; only `get` is used. */
  readonly cache: Pick<AccountCache, 'get'>;
  readonly observability: Observability;
}

/** `/accounts/<one path segment>`; the segment is percent-decoded before it is validated. */
const ACCOUNT_PATH = /^\/accounts\/([^/]+)$/;

type Response = APIGatewayProxyStructuredResultV2;

/**
 * The read API behind a Lambda Function URL: `GET /accounts/{id}`.
 *
 * - 200 `{ accountId, balance, version, profile, updatedAt }`, header `x-cache: hit | miss | bypass`
 *   (`bypass`: Redis unavailable, answered from the table)
 * - 400 for an id that is not valid (the body says what a valid one looks like)
 * - 404 for an unknown account or any other path; 405 (with `allow: GET`) for other methods
 * - 500 with a generic body for anything unexpected; the details go to the log, never to the caller
 *
 * @example
 * import { createReadApi } from './read-api.ts';
 * export const handler = createReadApi({ cache, observability });
 */
export function createReadApi(deps: ReadApiDependencies): (event: APIGatewayProxyEventV2) => Promise<Response> {
  const { logger, metrics } = deps.observability;
  return async function readApi(event) {
    try {
      const match = ACCOUNT_PATH.exec(event.rawPath ?? '');
      if (!match) return json(404, { message: 'not found' });
      const method = event.requestContext?.http?.method;
      if (method !== 'GET') return json(405, { message: `method ${String(method)} is not allowed; use GET` }, { allow: 'GET' });
      const accountId = decodeSegment(match[1] ?? '');
      if (accountId === undefined || !isCacheableAccountId(accountId)) return invalidId();
      const { account, source } = await deps.cache.get(accountId);
      if (!account) return json(404, { message: `account '${accountId}' not found` }, cacheHeader(source));
      return json(200, account, cacheHeader(source));
    } catch (error) {
      if (error instanceof InvalidAccountIdError) return invalidId();
      logger.error('read request failed', { rawPath: event.rawPath, requestId: event.requestContext?.requestId, error: error as Error });
      return json(500, { message: 'internal error' });
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}

function invalidId(): Response {
  return json(400, { message: `malformed account id: ${ACCOUNT_ID_RULE}` });
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function cacheHeader(source: ReadSource): Record<string, string> {
  return { 'x-cache': source };
}

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): Response {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
