import type { Context } from 'aws-lambda';
import { invokeWithTimeout, type InvocationResult, type LambdaHandler } from './invoke.ts';

/** How an invocation ended for an event source: as the runtime reports it, or abandoned at stop(). */
export type SettledInvocation = InvocationResult | { readonly status: 'abandoned' };

/** Which statistics counter each outcome bumps, for event sources that count them. */
export const outcomeCounters = { ok: 'ok', error: 'errors', timeout: 'timeouts', abandoned: 'abandoned' } as const;

/** The invocations an event source has in flight, which stop() abandons once its grace period ends. */
export interface AbandonableInvocations {
  /** Invokes like {@link invokeWithTimeout}, but resolves `abandoned` at once when {@link abandonAll} is called first. */
  invoke<TEvent>(handler: LambdaHandler<TEvent>, event: TEvent, context: Context, timeoutMs: number): Promise<SettledInvocation>;
  /** Gives up on every invocation still in flight: their callers go on without waiting for them. */
  abandonAll(): void;
}

/**
 * Tracks in-flight invocations so a stopping event source can stop waiting for them. An abandoned
 * handler keeps running (it cannot be killed in-process) but its result is ignored, as when Lambda
 * tears down a sandbox; the event source then leaves its records unsettled to be delivered again.
 *
 * @example
 * import { abandonableInvocations } from '../local/lambda/abandonable-invocations.ts';
 * const inFlight = abandonableInvocations();
 * const result = await inFlight.invoke(handler, event, context, 30_000); // elsewhere: inFlight.abandonAll()
 */
export function abandonableInvocations(): AbandonableInvocations {
  const abandonHooks = new Set<() => void>();
  return {
    invoke(handler, event, context, timeoutMs) {
      return new Promise<SettledInvocation>((resolve) => {
        const abandon = () => resolve({ status: 'abandoned' });
        abandonHooks.add(abandon);
        void invokeWithTimeout(handler, event, context, timeoutMs)
          .then(resolve, (error: unknown) => resolve({ status: 'error', error }))
          .finally(() => abandonHooks.delete(abandon));
      });
    },
    abandonAll: () => abandonHooks.forEach((abandon) => abandon()),
  };
}
