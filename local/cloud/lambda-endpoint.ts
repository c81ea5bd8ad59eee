import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FunctionRuntime } from '../lambda/function-runtime.ts';
import { InvocationError } from '../lambda/function-runtime.ts';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';
import { functionNameOf, LOCAL_ACCOUNT } from './provision.ts';
import { LOCAL_REGION } from '../engines/index.ts';

const functionArnOf = (name: string) => `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${name}`;

const INVOKE = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * The Lambda `Invoke` API (REST-JSON, as `@aws-sdk/client-lambda` and `aws lambda invoke` speak
 * it) over the local cloud's functions: by name, ARN or qualified ARN (a version runs that
 * version, as the pre-traffic hook invokes the version being deployed). A handler error answers 200
 * with `X-Amz-Function-Error: Unhandled` and the error as the payload, as Lambda does. Functions
 * reach it through `AWS_ENDPOINT_URL_LAMBDA` (the pre-traffic hook invokes the worker this way).
 */
export function serveLambda(resolveFunction: FunctionResolver, port = 0, authorize?: CallAuthorizer): Promise<LocalEndpoint> {
  return listenLocal((request, response) => handle(resolveFunction, request, response, authorize), port);
}

/**
 * Decides a call to one of the cloud's own endpoints for whoever signed `request`: undefined to go
 * on, or AWS's refusal message.
 */
export type CallAuthorizer = (request: IncomingMessage, call: { readonly action: string; readonly resource: string }) => Promise<string | undefined>;

/**
 * The runtime an invocation of `name` with `qualifier` (a version number, an alias, or none for
 * `$LATEST`) runs on, and the version it reports; undefined when there is no such function or version.
 */
export type FunctionResolver = (name: string, qualifier: string | undefined) => { readonly runtime: FunctionRuntime; readonly version: string } | undefined;

/** `name`, `name:qualifier`, or a function ARN with or without its qualifier → the qualifier. */
function qualifierOf(reference: string, query: string | null): string | undefined {
  const parts = reference.startsWith('arn:') ? reference.split(':').slice(7) : reference.split(':').slice(1);
  return parts[0] ?? query ?? undefined;
}

async function handle(resolveFunction: FunctionResolver, request: IncomingMessage, response: ServerResponse, authorize?: CallAuthorizer): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const match = INVOKE.exec(url.pathname);
  if (request.method !== 'POST' || !match?.[1]) return reply(response, 404, { Type: 'User', message: 'only Invoke is emulated' });
  const reference = decodeURIComponent(match[1]);
  const name = functionNameOf(reference);
  const qualifier = qualifierOf(reference, url.searchParams.get('Qualifier'));
  const target = resolveFunction(name, qualifier);
  if (!target) {
    return reply(response, 404, { Type: 'User', message: `Function not found: ${name}${qualifier ? `:${qualifier}` : ''}` }, { 'x-amzn-errortype': 'ResourceNotFoundException' });
  }
  const { runtime, version } = target;
  const body = await readBody(request);
  const refused = await authorize?.(request, { action: 'lambda:InvokeFunction', resource: `${functionArnOf(name)}${qualifier && qualifier !== '$LATEST' ? `:${qualifier}` : ''}` });
  if (refused) return reply(response, 403, { Type: 'User', Message: refused, message: refused }, { 'x-amzn-errortype': 'AccessDeniedException' });
  let event: unknown = {};
  try {
    event = body ? JSON.parse(body) : {};
  } catch {
    return reply(response, 400, { Type: 'User', message: 'Could not parse request body into json' }, { 'x-amzn-errortype': 'InvalidRequestContentException' });
  }
  try {
    const result = await runtime.invoke(event);
    return reply(response, 200, result ?? null, { 'x-amz-executed-version': version });
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    const errorType = e instanceof InvocationError && e.errorType !== 'Handler' ? `Sandbox.${e.errorType}` : e.name;
    return reply(response, 200, { errorType, errorMessage: e.message }, { 'x-amz-function-error': 'Unhandled', 'x-amz-executed-version': version });
  }
}

function reply(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}
