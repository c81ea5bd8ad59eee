import { createServer, type IncomingMessage, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { readBody } from '../http.ts';

/**
 * Serves a Lambda Function URL on a local port: each HTTP request becomes the payload-format 2.0
 * event AWS sends, and the handler's structured result (or a plain value, as JSON) becomes the
 * response. A failed invocation is a 502, as a real Function URL answers.
 */
export async function serveFunctionUrl(port: number, invoke: (event: APIGatewayProxyEventV2) => Promise<unknown>): Promise<Server> {
  const server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      const url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
      const event = toEvent(request, url, body);
      let result: unknown;
      try {
        result = await invoke(event);
      } catch (error) {
        response.writeHead(502, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: 'Internal Server Error', error: (error as Error).name }));
        return;
      }
      const structured = isStructured(result) ? result : { statusCode: 200, body: JSON.stringify(result), headers: { 'content-type': 'application/json' } };
      response.writeHead(structured.statusCode ?? 200, structured.headers as Record<string, string> | undefined);
      response.end(structured.isBase64Encoded && structured.body ? Buffer.from(structured.body, 'base64') : structured.body ?? '');
    })();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

function isStructured(value: unknown): value is APIGatewayProxyStructuredResultV2 {
  return typeof value === 'object' && value !== null && 'statusCode' in value;
}

function toEvent(request: IncomingMessage, url: URL, body: string): APIGatewayProxyEventV2 {
  const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)]));
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(url.search ? { queryStringParameters: Object.fromEntries(url.searchParams) } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: { method: request.method ?? 'GET', path: url.pathname, protocol: 'HTTP/1.1', sourceIp: request.socket.remoteAddress ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body ? { body, isBase64Encoded: false } : { isBase64Encoded: false }),
  };
}
