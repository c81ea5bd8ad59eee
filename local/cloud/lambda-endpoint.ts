import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FunctionRuntime } from '../lambda/function-runtime.ts';
import { InvocationError } from '../lambda/function-runtime.ts';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';
import { functionNameOf } from './provision.ts';

const INVOKE = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * The Lambda `Invoke` API (REST-JSON, as `@aws-sdk/client-lambda` and `aws lambda invoke` speak
 * it) over the local cloud's functions: by name, ARN or qualified ARN. A handler error answers 200
 * with `X-Amz-Function-Error: Unhandled` and the error as the payload, as Lambda does. Functions
 * reach it through `AWS_ENDPOINT_URL_LAMBDA` (the pre-traffic hook invokes the worker this way).
 */
export function serveLambda(runtimes: ReadonlyMap<string, FunctionRuntime>, port = 0): Promise<LocalEndpoint> {
  return listenLocal((request, response) => handle(runtimes, request, response), port);
}

async function handle(runtimes: ReadonlyMap<string, FunctionRuntime>, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const match = INVOKE.exec(new URL(request.url ?? '/', 'http://localhost').pathname);
  if (request.method !== 'POST' || !match?.[1]) return reply(response, 404, { Type: 'User', message: 'only Invoke is emulated' });
  const name = functionNameOf(decodeURIComponent(match[1]));
  const runtime = runtimes.get(name);
  if (!runtime) return reply(response, 404, { Type: 'User', message: `Function not found: ${name}` }, { 'x-amzn-errortype': 'ResourceNotFoundException' });
  const body = await readBody(request);
  let event: unknown = {};
  try {
    event = body ? JSON.parse(body) : {};
  } catch {
    return reply(response, 400, { Type: 'User', message: 'Could not parse request body into json' }, { 'x-amzn-errortype': 'InvalidRequestContentException' });
  }
  try {
    const result = await runtime.invoke(event);
    return reply(response, 200, result ?? null, { 'x-amz-executed-version': '$LATEST' });
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    const errorType = e instanceof InvocationError && e.errorType !== 'Handler' ? `Sandbox.${e.errorType}` : e.name;
    return reply(response, 200, { errorType, errorMessage: e.message }, { 'x-amz-function-error': 'Unhandled', 'x-amz-executed-version': '$LATEST' });
  }
}

function reply(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}
