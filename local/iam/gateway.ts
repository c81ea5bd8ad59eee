/**
 * The functions' way to DynamoDB and SQS, authorized: each request is read for who signed it who signed each request (the access key of its SigV4 `Authorization`
 * header: each function's sandbox has its own, see {@link functionCredentials}), maps the request
 * to its IAM calls (`requests.ts`) and lets it through only if the {@link Authorizer} allows every
 * one. A refusal answers as the service does (`AccessDeniedException`, in its protocol's shape),
 * so the code's own error handling runs, and is logged with what decided it.
 *
 * Requests signed with the local operator's key (the local cloud's own clients, a producer or a
 * test beside it) pass unchecked, as an administrator's would; any other key is refused as an
 * invalid token, which is what AWS answers for a key it does not know.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LOCAL_CREDENTIALS } from '../engines/index.ts';
import { parseJsonBody, readBytes, sendReply, serveHop, withoutHopByHop, type HttpReply, type LocalEndpoint } from '../http.ts';
import { refusalMessage, type Authorizer, type CallPrincipal, type Decision } from './authorizer.ts';
import { dynamoDbCalls, dynamoDbOperation, sqsCalls, sqsOperation, type ArnScope, type RequestedCall } from './requests.ts';

export type GatewayService = 'dynamodb' | 'sqs';

export interface AuthorizingGatewayOptions {
  readonly service: GatewayService;
  /** Where allowed requests go, `http://host:port`. */
  readonly target: string;
  readonly authorizer: Authorizer;
  readonly scope: ArnScope;
  /** The principal each access key stands for. */
  readonly principals: (accessKeyId: string) => CallPrincipal | undefined;
}

/** The credentials a function's sandbox gets: a key that names it to the gateways. */
export function functionCredentials(functionName: string): { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken: string } {
  const digest = createHash('sha256').update(functionName).digest('hex').slice(0, 16).toUpperCase();
  return { accessKeyId: `ASIALOCAL${digest}`, secretAccessKey: 'local', sessionToken: `local-session-${functionName}` };
}

/** The access key id of a SigV4-signed request (`Credential=<key>/<date>/...`), if any. */
export function signingKeyOf(authorization: string | string[] | undefined): string | undefined {
  const header = Array.isArray(authorization) ? authorization[0] : authorization;
  return header?.match(/Credential=([^/,\s]+)\//)?.[1];
}

/** Who signed a request, decided: the operator (unchecked), a key nobody has, or a function's calls allowed or refused. */
export type SignedVerdict = { readonly kind: 'allowed' } | { readonly kind: 'invalid-token' } | { readonly kind: 'refused'; readonly decision: Decision };

/**
 * Decides `calls` for whoever signed the request (its `Authorization` header), as every local
 * endpoint the functions call does: the gateways here, and the cloud's Lambda and CodeDeploy.
 */
export async function decideSigned(
  options: Pick<AuthorizingGatewayOptions, 'authorizer' | 'principals'>, authorization: string | string[] | undefined, calls: () => readonly RequestedCall[] | undefined,
  route: { readonly service?: string } = {},
): Promise<SignedVerdict | { readonly kind: 'unreadable' }> {
  const key = signingKeyOf(authorization);
  if (key === LOCAL_CREDENTIALS.accessKeyId) return { kind: 'allowed' };
  const principal = key === undefined ? undefined : options.principals(key);
  if (!principal) return { kind: 'invalid-token' };
  const requested = calls();
  if (!requested) return { kind: 'unreadable' };
  const refusal = await options.authorizer.authorizeAll(principal, requested, route);
  return refusal ? { kind: 'refused', decision: refusal } : { kind: 'allowed' };
}

/**
 * The service's answer to a request the local IAM does not let through, or undefined to go on:
 * for a hop in front of DynamoDB or SQS (the DynamoDB one is the measuring hop's first step, so
 * an authorized call costs no hop of its own).
 */
export async function refusalOf(options: Omit<AuthorizingGatewayOptions, 'target'>, request: IncomingMessage, body: Buffer): Promise<HttpReply | undefined> {
  const callsOf = (): RequestedCall[] | undefined => {
    const target = request.headers['x-amz-target'];
    const operation = options.service === 'dynamodb' ? dynamoDbOperation(target) : sqsOperation(target);
    if (operation === undefined) return undefined;
    const parsed = parseJsonBody(body) as Record<string, unknown> | undefined;
    return options.service === 'dynamodb' ? dynamoDbCalls(operation, parsed, options.scope) : sqsCalls(operation, parsed, options.scope);
  };
  const verdict = await decideSigned(options, request.headers.authorization, callsOf, { service: options.service });
  switch (verdict.kind) {
    case 'allowed': return undefined;
    case 'invalid-token': return invalidToken(options.service);
    // A request in a protocol the gateway cannot read (SQS's query form) cannot be authorized: refused, named.
    case 'unreadable': return accessDenied(options.service, `the local cloud cannot authorize a ${options.service} request without a JSON X-Amz-Target (got ${String(request.headers['x-amz-target'])})`);
    case 'refused': return accessDenied(options.service, refusalMessage(verdict.decision));
  }
}

/** An authorizing hop of its own in front of `target` (the functions' way to SQS). */
export async function serveAuthorizingGateway(options: AuthorizingGatewayOptions): Promise<LocalEndpoint> {
  const origin = new URL(options.target).origin;
  return serveHop(options.target, async (request, response, { relay, url }) => {
    const body = await readBytes(request);
    const refused = await refusalOf(options, request, body);
    if (refused) return sendReply(response, refused);
    let reply: HttpReply;
    try {
      reply = await relay.send(body, withoutHopByHop(request.headers), request.method, request.url);
    } catch {
      // The next hop dropped the connection (e.g. a lost answer on purpose): so does this one.
      return void request.socket.destroy();
    }
    // A queue URL in an answer names this hop, not the engine: the client sends its next calls to the URL's host.
    sendReply(response, options.service === 'sqs' ? withOrigin(reply, origin, url) : reply);
  });
}

function withOrigin(reply: HttpReply, from: string, to: string): HttpReply {
  const text = reply.body.toString('utf8');
  return text.includes(from) ? { ...reply, body: Buffer.from(text.replaceAll(from, to)) } : reply;
}

/** The service's answer to a refused call. */
export function accessDenied(service: GatewayService, message: string): HttpReply {
  return service === 'dynamodb'
    ? jsonError(400, 'com.amazon.coral.service#AccessDeniedException', message, 'application/x-amz-json-1.0')
    : jsonError(403, 'com.amazon.coral.service#AccessDeniedException', message, 'application/x-amz-json-1.0', 'AccessDenied;Sender');
}

function invalidToken(service: GatewayService): HttpReply {
  const message = 'The security token included in the request is invalid.';
  return service === 'dynamodb'
    ? jsonError(400, 'com.amazon.coral.service#UnrecognizedClientException', message, 'application/x-amz-json-1.0')
    : jsonError(403, 'com.amazon.coral.service#InvalidClientTokenId', message, 'application/x-amz-json-1.0', 'InvalidClientTokenId;Sender');
}

function jsonError(status: number, type: string, message: string, contentType: string, queryError?: string): HttpReply {
  return {
    status,
    headers: { 'content-type': contentType, 'x-amzn-requestid': crypto.randomUUID(), ...(queryError ? { 'x-amzn-query-error': queryError } : {}) },
    body: Buffer.from(JSON.stringify({ __type: type, message, Message: message })),
  };
}

export type { Decision };
