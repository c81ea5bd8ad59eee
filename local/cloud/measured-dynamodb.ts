import { performance } from 'node:perf_hooks';
import { crc32 } from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import { dynamoDbOperation } from '../engines/index.ts';
import { askingConsumedCapacity, dynamoDbDatapoints, isMeasuredOperation, withoutConsumedCapacity } from '../cloudwatch/index.ts';
import { parseJsonBody, readBytes, sendReply, serveHop, withoutHopByHop, type HttpReply, type LocalEndpoint } from '../http.ts';
import type { MetricsCollector } from './metrics.ts';

/**
 * The functions' way to DynamoDB, measured: an HTTP hop in front of `target` (DynamoDB Local, or
 * the chaos run's fault proxy in front of it) that records DynamoDB's metrics of every request the
 * stack's code makes (see `dynamodb-metrics.ts`), since DynamoDB Local publishes none. Only the
 * functions' calls are the stack's traffic: the cloud's own (provisioning, stream polling) go to
 * the engine directly.
 *
 * Each request is forwarded as sent, except that an item operation which does not ask for its
 * consumed capacity is made to (DynamoDB Local checks no signature), and the answer's
 * `ConsumedCapacity` removed again, so the caller gets the answer it asked for. An answer the
 * target does not give (a connection lost on purpose by the fault proxy, or refused) is not given
 * either: the caller's connection is dropped, so its SDK retries as it would have without this
 * hop, and nothing is recorded, as nothing is known.
 */
export async function serveMeasuredDynamoDb(options: {
  readonly target: string;
  readonly metrics: MetricsCollector;
  /** The answer to a request not let through (the local IAM's refusal), checked first; a refused call is not the table's traffic. @default - every request goes on */
  readonly refusalOf?: (request: IncomingMessage, body: Buffer) => Promise<HttpReply | undefined>;
}): Promise<LocalEndpoint> {
  const { metrics } = options;
  return serveHop(options.target, async (request, response, { relay }) => {
    const body = await readBytes(request);
    const refused = await options.refusalOf?.(request, body);
    if (refused) return sendReply(response, refused);
    const operation = dynamoDbOperation(request.headers['x-amz-target']);
    const parsed = operation !== undefined && isMeasuredOperation(operation) ? parseJsonBody(body) : undefined;
    const rewritten = operation !== undefined ? askingConsumedCapacity(operation, parsed) : undefined;
    const startedMs = performance.now();
    let reply: HttpReply;
    try {
      reply = await relay.send(rewritten ? Buffer.from(JSON.stringify(rewritten)) : body, withoutHopByHop(request.headers), request.method, request.url);
    } catch {
      return void request.socket.destroy();
    }
    const latencyMs = performance.now() - startedMs;
    if (operation !== undefined && parsed !== undefined) {
      const answer = parseJsonBody(reply.body);
      const nowMs = metrics.clock();
      for (const { identity, value } of dynamoDbDatapoints({ operation, request: parsed, status: reply.status, response: answer, latencyMs })) {
        metrics.series.record(identity, value, nowMs);
      }
      if (rewritten && reply.status === 200 && typeof answer === 'object' && answer !== null) {
        reply = withBody(reply, Buffer.from(JSON.stringify(withoutConsumedCapacity(answer as Record<string, unknown>))));
      }
    }
    sendReply(response, reply);
  });
}

/** `reply` with another body; its checksum (`x-amz-crc32`, which DynamoDB clients may verify) follows. */
function withBody(reply: HttpReply, body: Buffer): HttpReply {
  const headers = Object.fromEntries(Object.entries(reply.headers).map(([name, value]) => [name, name === 'x-amz-crc32' ? String(crc32(body)) : value]));
  return { ...reply, headers, body };
}
