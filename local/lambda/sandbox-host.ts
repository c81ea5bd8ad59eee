/**
 * Runs inside a worker thread: one Lambda sandbox. Loads the bundled handler once (cold start),
 * then serves invocations one at a time, as a Lambda execution environment does. The thread has
 * its own `process.env` (the function's environment) and its own stdout (its log stream).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { createLambdaContext } from './context.ts';
import type { SpanRecord } from '../../shared/operations/trace-model.ts';

export interface SandboxInit {
  readonly file: string;
  readonly exportName: string;
  readonly functionName: string;
  readonly memoryLimitInMB: number;
}

export interface InvokeMessage {
  readonly id: number;
  readonly event: unknown;
  readonly deadlineMs: number;
  readonly awsRequestId: string;
  /** Fault injection: sleep this long before calling the handler. */
  readonly delayMs?: number;
}

export type ResultMessage =
  | { readonly id: number; readonly ok: true; readonly response: unknown }
  | { readonly id: number; readonly ok: false; readonly error: { name: string; message: string; stack?: string } };

/** Spans the sandbox finished, posted before the result of the invocation they belong to. */
export interface SpansMessage {
  readonly spans: readonly SpanRecord[];
}

const init = workerData as SandboxInit;
const port = parentPort;
if (!port) throw new Error('sandbox-host must run in a worker thread');

// As the OpenTelemetry layer's wrapper does, the SDK is registered before the handler is loaded,
// and only when the function's environment names the wrapper.
const tracing = process.env.AWS_LAMBDA_EXEC_WRAPPER
  ? (await import('../tracing/sandbox.ts')).registerSandboxTracing({
    environment: process.env, functionName: init.functionName, post: (spans) => port.postMessage({ spans } satisfies SpansMessage),
  })
  : undefined;

const module = (await import(pathToFileURL(init.file).href)) as Record<string, unknown>;
const handler = module[init.exportName];
if (typeof handler !== 'function') throw new Error(`${init.file} does not export a function '${init.exportName}'`);

port.on('message', (message: InvokeMessage) => {
  void (async () => {
    try {
      if (message.delayMs) await new Promise((resolve) => setTimeout(resolve, message.delayMs));
      const context = createLambdaContext({
        functionName: init.functionName,
        memoryLimitInMB: init.memoryLimitInMB,
        timeoutMs: Math.max(1, message.deadlineMs - Date.now()),
        awsRequestId: message.awsRequestId,
      });
      const response: unknown = await (handler as (event: unknown, context: unknown) => Promise<unknown>)(message.event, context);
      tracing?.flush();
      // Responses cross the boundary as JSON, as Lambda's runtime API carries them.
      port.postMessage({ id: message.id, ok: true, response: response === undefined ? null : JSON.parse(JSON.stringify(response)) } satisfies ResultMessage);
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      tracing?.flush();
      port.postMessage({ id: message.id, ok: false, error: { name: e.name, message: e.message, stack: e.stack } } satisfies ResultMessage);
    }
  })();
});
port.postMessage({ ready: true });
