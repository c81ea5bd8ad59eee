import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The whole body of an HTTP request, as UTF-8. */
export function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
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
