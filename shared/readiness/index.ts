import type { MiddlewareObj } from '@middy/core';
import { parseEnvelope, SAMPLE_ENVELOPE_BODIES, SUPPORTED_MAJOR_VERSIONS } from '../envelope/index.ts';

/** The event a pre-traffic hook sends to a new function version to ask "are you ready?". */
export interface ReadinessEvent {
  readonly ballastReadiness: true;
}

export interface ReadinessCheck {
  readonly name: string;
  /** Resolves when the dependency answers; throws (with a reason) when it does not. */
  readonly run: () => Promise<void>;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly detail?: string }[];
}

export function isReadinessEvent(event: unknown): event is ReadinessEvent {
  return typeof event === 'object' && event !== null && (event as { ballastReadiness?: unknown }).ballastReadiness === true;
}

/** Checks that every supported envelope major version's sample parses. */
export function envelopeChecks(): ReadinessCheck[] {
  return SUPPORTED_MAJOR_VERSIONS.map((major) => ({
    name: `envelope v${major}`,
    run: async () => {
      const body = SAMPLE_ENVELOPE_BODIES[major];
      if (!body) throw new Error(`no sample envelope for major version ${major}`);
      parseEnvelope(body);
    },
  }));
}

/** Runs checks concurrently, each bounded by `timeoutMs`; never throws. */
export async function runReadiness(checks: readonly ReadinessCheck[], timeoutMs = 3_000): Promise<ReadinessReport> {
  const results = await Promise.all(checks.map(async (check) => {
    try {
      await Promise.race([
        check.run(),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref()),
      ]);
      return { name: check.name, ok: true };
    } catch (error) {
      return { name: check.name, ok: false, detail: error instanceof Error ? error.message : String(error) };
    }
  }));
  return { ready: results.every((result) => result.ok), checks: results };
}

/**
 * Middy middleware that answers a {@link ReadinessEvent} with a {@link ReadinessReport} instead of
 * running the handler: the serverless form of a readiness probe, invoked on the new version by the
 * CodeDeploy pre-traffic hook before any traffic shifts to it. Register it first.
 */
export function readinessProbe(checks: () => readonly ReadinessCheck[]): MiddlewareObj<unknown, unknown> {
  const readinessProbeMiddlewareBefore = async (request: { event: unknown }) => {
    if (!isReadinessEvent(request.event)) return undefined;
    return runReadiness(checks());
  };
  return { before: readinessProbeMiddlewareBefore };
}
export { pingCache, type CachePingTarget } from './cache-ping.ts';
