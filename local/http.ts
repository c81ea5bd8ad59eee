import { setMaxListeners } from 'node:events';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The whole body of an HTTP message, as bytes; rejects if the connection closes before it ends. */
export function readBytes(message: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    message.on('data', (chunk: Buffer) => chunks.push(chunk));
    message.once('end', () => resolve(Buffer.concat(chunks)));
    message.on('error', reject);
    message.once('aborted', () => reject(new Error('connection closed before the body ended')));
  });
}

/** The whole body of an HTTP request, as UTF-8. */
export async function readBody(request: IncomingMessage): Promise<string> {
  return (await readBytes(request)).toString('utf8');
}

/** A local HTTP service: where it listens and how to stop it. */
export interface LocalEndpoint {
  /** `http://127.0.0.1:<port>`, e.g. for an `AWS_ENDPOINT_URL_<SERVICE>` variable. */
  readonly url: string;
  stop(): Promise<void>;
}

/** Serves `handle` on a loopback port (free unless given); a handler that throws answers 500. */
export async function listenLocal(
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>, port = 0,
): Promise<LocalEndpoint> {
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: String(error) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** An HTTP answer held whole, so a proxy can look at it (or make it up) before the client gets it. */
export interface HttpReply {
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
}

/** Headers that belong to one connection, not to the request or answer being relayed. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'];

export function withoutHopByHop(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.includes(name)) kept[name] = value;
  }
  return kept;
}

/** Answers with `reply`, unless the client is gone or an answer has started. */
export function sendReply(response: ServerResponse, reply: HttpReply): void {
  if (response.destroyed || response.headersSent) return;
  response.writeHead(reply.status, { ...reply.headers, 'content-length': String(reply.body.length) });
  response.end(reply.body);
}

/**
 * Forwards held requests to one `http://host:port` service over kept-alive connections, for the
 * proxies in front of an engine: the hop costs a loopback round trip, not a connection per request.
 */
export interface HttpRelay {
  /** Sends `body` with `headers` (hop-by-hop ones removed already) and holds the whole answer; rejects if the target does not answer. */
  send(body: Buffer, headers: Record<string, string | string[]>, method?: string, path?: string): Promise<HttpReply>;
  /** Closes the kept-alive connections. */
  close(): void;
}

/** A relay to `target`; aborting `signal` cancels every request in flight (e.g. when the proxy stops). */
export function httpRelay(target: URL, signal: AbortSignal): HttpRelay {
  const agent = new Agent({ keepAlive: true });
  return {
    send: (body, headers, method = 'POST', path = '/') => new Promise((resolve, reject) => {
      const upstream = httpRequest({
        hostname: target.hostname, port: target.port, method, path, agent, signal,
        headers: { ...headers, host: target.host, 'content-length': String(body.length) },
      }, (answer) => {
        readBytes(answer).then((answerBody) => resolve({ status: answer.statusCode ?? 502, headers: withoutHopByHop(answer.headers), body: answerBody }), reject);
      });
      upstream.on('error', reject);
      upstream.end(body);
    }),
    close: () => agent.destroy(),
  };
}

/** A JSON body, or undefined if it is not JSON. */
export function parseJsonBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * A hop in front of one HTTP service (a measuring, authorizing or fault-injecting proxy):
 * `handle` gets each request, the relay to `target` and the hop's own URL. Stopping cancels the
 * requests in flight, closes the port, then the relay's kept-alive connections.
 */
export async function serveHop(
  target: string,
  handle: (request: IncomingMessage, response: ServerResponse, hop: { readonly relay: HttpRelay; readonly url: string }) => Promise<void>,
): Promise<LocalEndpoint> {
  const stopping = new AbortController();
  // Every request in flight listens to it; a busy cloud has far more than 10.
  setMaxListeners(0, stopping.signal);
  const relay = httpRelay(new URL(target), stopping.signal);
  let url = '';
  const server = await listenLocal((request, response) => handle(request, response, { relay, url }));
  url = server.url;
  let stopped: Promise<void> | undefined;
  return {
    url,
    stop: () => (stopped ??= (async () => {
      stopping.abort();
      await server.stop();
      relay.close();
    })()),
  };
}
