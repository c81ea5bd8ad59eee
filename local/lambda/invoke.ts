import type { Context } from 'aws-lambda';
import { InvocationError } from './function-runtime.ts';

/** An async Lambda handler, as the Node.js 24 runtime calls it. */
export type LambdaHandler<TEvent> = (event: TEvent, context: Context) => Promise<unknown>;

/** How one invocation ended, as the caller of a Lambda function sees it. */
export type InvocationResult =
  /** The handler resolved; `response` is its value after the runtime's JSON round trip. */
  | { readonly status: 'ok'; readonly response: unknown }
  /** The handler threw, rejected, or resolved to something the runtime cannot serialize. */
  | { readonly status: 'error'; readonly error: unknown }
  /** The handler was still running when the function timeout elapsed. */
  | { readonly status: 'timeout' };

/**
 * Calls `handler` the way the Lambda runtime does and reports how the invocation ended.
 *
 * When `timeoutMs` elapses first, or the handler is a sandbox its runtime killed at the function
 * timeout (an {@link InvocationError} of type `Timeout`), the result is `timeout`; the first way, the
 * handler's promise is abandoned,
 * as when Lambda kills the sandbox: whatever it does later is ignored by the caller. (It cannot be
 * stopped in-process, so its side effects still happen, like those of a sandbox killed mid-write.)
 * A rejection that arrives after that is handled here, so it never becomes an unhandled rejection
 * that would crash the process.
 *
 * The resolved value goes through a JSON round trip because that is what Lambda's caller (the
 * event source mapping included) receives: `undefined` becomes `null`, class instances become
 * plain objects, and an unserializable value (a BigInt, a cycle) is an invocation error.
 *
 * @example
 * import { invokeWithTimeout } from '../local/lambda/invoke.ts';
 * const result = await invokeWithTimeout(handler, event, context, 30_000);
 * if (result.status === 'ok') console.log(result.response);
 */
export function invokeWithTimeout<TEvent>(
  handler: LambdaHandler<TEvent>,
  event: TEvent,
  context: Context,
  timeoutMs: number,
): Promise<InvocationResult> {
  let running: Promise<unknown>;
  try {
    running = Promise.resolve(handler(event, context));
  } catch (error) {
    return Promise.resolve({ status: 'error', error });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ status: 'timeout' }), timeoutMs);
    // Both branches are attached now, so a late rejection of an abandoned handler is handled.
    running.then(
      (value) => {
        clearTimeout(timer);
        resolve(serialized(value));
      },
      (error: unknown) => {
        clearTimeout(timer);
        // A sandbox the runtime killed at its own deadline timed out, whichever clock noticed first.
        resolve(error instanceof InvocationError && error.errorType === 'Timeout' ? { status: 'timeout' } : { status: 'error', error });
      },
    );
  });
}

/** The handler's value as the runtime ships it: serialized to JSON and parsed back. */
function serialized(value: unknown): InvocationResult {
  try {
    const json = JSON.stringify(value);
    return { status: 'ok', response: json === undefined ? null : JSON.parse(json) };
  } catch (error) {
    return { status: 'error', error };
  }
}
