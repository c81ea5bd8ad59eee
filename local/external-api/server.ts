import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../http.ts';

/**
 * A small stand-in for an external HTTP API that a job calls, used by tests and the local cloud.
 * It serves one POST route whose path names a resource, and knows nothing of the domain: the
 * caller's {@link ExternalApiOptions.answer} makes the answer. Like a well-behaved payment or CRM
 * API it honours the `Idempotency-Key` header: a repeated key gets the stored answer back (with
 * `Idempotent-Replayed: true`) and causes no second effect; the same key with a different body is
 * a 422. It also remembers the highest `X-Fencing-Token` per resource and refuses lower ones (409),
 * which is how an external system protects itself from a stalled former lock holder.
 */
export interface ExternalApiOptions {
  /** For messages and logs, e.g. 'payments'. */
  readonly name: string;
  /** Matches the one POST path the API serves; capture group 1 is the resource id (percent-decoded by the server). */
  readonly path: RegExp;
  /**
   * The answer of a first-time request (the effect): given the resource id, its effect count
   * including this one (1, 2, ...), the Idempotency-Key and the parsed JSON request body
   * (`undefined` when the body is empty or not JSON).
   */
  readonly answer: (effect: { resourceId: string; revision: number; key: string; body: unknown }) => Record<string, unknown>;
  /**
   * The bodies a `non-object` chaos fault answers with (JSON texts that are not objects), one
   * picked per fault by the chaos `random`. @default ['["not","an","object"]', '"ok"']
   */
  readonly nonObjectBodies?: readonly [string, ...string[]];
  /** @default a free port */
  readonly port?: number;
}

/** A running {@link startExternalApi} and its test controls. */
export interface ExternalApi {
  readonly url: string;
  /** Side effects actually performed (first-time keys only), of one resource or of all. */
  effects(resourceId?: string): number;
  /** Every request received, including replays. */
  requests(): number;
  /** The next `count` calls for `resourceId` (or any resource with '*') answer `status`. */
  failNext(resourceId: string, count: number, status?: number): void;
  /** Delays every answer by `delayMs` from now on. */
  setDelay(delayMs: number): void;
  /** The next `count` calls for `resourceId` (or any resource with '*') answer 200 with `body` as is (e.g. `'[1]'`), and perform no effect. */
  answerNext(resourceId: string, count: number, body: string): void;
  /**
   * Per Idempotency-Key: requests that reached the handler with it (replays included) and effects
   * performed for it. An effect count above 1 would be a double external effect; calls above 1
   * are replays the key absorbed (a worker that called again).
   */
  keys(): ReadonlyMap<string, { readonly calls: number; readonly effects: number }>;
  /** Random faults from now on (e.g. the chaos run's API); see {@link ExternalApiChaos}. */
  setChaos(chaos: ExternalApiChaos | undefined): void;
  /** Faults {@link setChaos} injected so far, by kind. */
  injected(): Readonly<Record<ExternalApiFaultKind, number>>;
  /** Idempotency-Keys that were answered 200 with a non-object body (the caller rightly rejects those answers). */
  rejectedKeys(): ReadonlySet<string>;
  stop(): Promise<void>;
}

/** What a misbehaving API does to one request. */
export const EXTERNAL_API_FAULTS = { serverError: 'server-error', slow: 'slow', hang: 'hang', nonObject: 'non-object' } as const;
export type ExternalApiFaultKind = (typeof EXTERNAL_API_FAULTS)[keyof typeof EXTERNAL_API_FAULTS];

/**
 * Per-request fault rates, drawn once per request from `random` (seeded in the chaos run). Slow
 * and hung requests still take effect when they finally run, as a real slow API's do: the
 * caller that gave up must not cause a second effect when it retries.
 */
export interface ExternalApiChaos {
  readonly random: () => number;
  /** 503 before anything happens. @default 0 */
  readonly serverErrorRate?: number;
  /** Answer after `slowMs` (longer than a lock lease, shorter than the caller's timeout). @default 0 */
  readonly slowRate?: number;
  /** @default 2_500 */
  readonly slowMs?: number;
  /** Answer after `hangMs`, past the caller's timeout. @default 0 */
  readonly hangRate?: number;
  /** @default 8_000 */
  readonly hangMs?: number;
  /** 200 with a JSON text that is not an object, and no effect. @default 0 */
  readonly nonObjectRate?: number;
  /**
   * Resources whose every call takes this long (ms) at least: a backend slow for one customer, so
   * that its callers hold their locks past a lease, one after another. @default {}
   */
  readonly slowResources?: Readonly<Record<string, number>>;
}

interface Stored {
  readonly body: string;
  readonly requestBody: string;
}

/** Starts the API on 127.0.0.1 (unref'd, so it never keeps the process alive). */
export async function startExternalApi(options: ExternalApiOptions): Promise<ExternalApi> {
  const { name, path, answer, nonObjectBodies = ['["not","an","object"]', '"ok"'] } = options;
  const answers = new Map<string, Stored>();
  const effectsByResource = new Map<string, number>();
  const fences = new Map<string, number>();
  const failures = new Map<string, { count: number; status: number; body?: string }>();
  const byKey = new Map<string, { calls: number; effects: number }>();
  let requestCount = 0;
  let delayMs = 0;
  let chaos: ExternalApiChaos | undefined;
  const injected: Record<ExternalApiFaultKind, number> = { 'server-error': 0, slow: 0, hang: 0, 'non-object': 0 };
  const rejected = new Set<string>();

  const drawFault = (): ExternalApiFaultKind | undefined => {
    if (!chaos) return undefined;
    let roll = chaos.random();
    const rates = [
      [EXTERNAL_API_FAULTS.serverError, chaos.serverErrorRate], [EXTERNAL_API_FAULTS.slow, chaos.slowRate],
      [EXTERNAL_API_FAULTS.hang, chaos.hangRate], [EXTERNAL_API_FAULTS.nonObject, chaos.nonObjectRate],
    ] as const;
    for (const [drawn, rate] of rates) {
      roll -= rate ?? 0;
      if (roll < 0) {
        // The first faults are one of each enabled kind: a run that never drew a rare kind (a hang
        // at 1 % of a few hundred calls) would not have exercised its path at all.
        const kind = rates.find(([k, r]) => (r ?? 0) > 0 && injected[k] === 0)?.[0] ?? drawn;
        injected[kind] += 1;
        return kind;
      }
    }
    return undefined;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    requestCount += 1;
    const requestBody = await readBody(request);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const match = path.exec(request.url ?? '');
    if (request.method !== 'POST' || !match?.[1]) return send(response, 404, { error: 'not found' });
    const resourceId = decodeURIComponent(match[1]);
    const failure = failures.get(resourceId) ?? failures.get('*');
    if (failure && failure.count > 0) {
      failure.count -= 1;
      if (failure.body !== undefined) return sendText(response, failure.status, failure.body);
      return send(response, failure.status, { error: 'injected failure' });
    }
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return send(response, 400, { error: 'Idempotency-Key header is required' });
    const seen = byKey.get(key) ?? { calls: 0, effects: 0 };
    seen.calls += 1;
    byKey.set(key, seen);
    const fault = drawFault();
    if (fault === EXTERNAL_API_FAULTS.serverError) return send(response, 503, { error: `injected: ${name} overloaded` });
    if (fault === EXTERNAL_API_FAULTS.nonObject) {
      rejected.add(key);
      // A fault is only drawn under chaos, so `chaos` is set; the pick keeps the seeded sequence reproducible.
      const pick = Math.floor((chaos?.random() ?? 0) * nonObjectBodies.length);
      return sendText(response, 200, nonObjectBodies[pick] ?? nonObjectBodies[0]);
    }
    const drawnMs = fault === EXTERNAL_API_FAULTS.slow ? chaos?.slowMs ?? 2_500 : fault === EXTERNAL_API_FAULTS.hang ? chaos?.hangMs ?? 8_000 : 0;
    const waitMs = Math.max(drawnMs, chaos?.slowResources?.[resourceId] ?? 0);
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    const fence = Number(request.headers['x-fencing-token'] ?? 0);
    if (fence < (fences.get(resourceId) ?? 0)) return send(response, 409, { error: `fencing token ${fence} is stale` });
    fences.set(resourceId, fence);

    const stored = answers.get(key);
    if (stored) {
      if (stored.requestBody !== requestBody) return send(response, 422, { error: 'Idempotency-Key reused with a different request' });
      return sendText(response, 200, stored.body, { 'idempotent-replayed': 'true' });
    }
    const revision = (effectsByResource.get(resourceId) ?? 0) + 1;
    effectsByResource.set(resourceId, revision);
    seen.effects += 1;
    const body = JSON.stringify(answer({ resourceId, revision, key, body: parseJson(requestBody) }));
    answers.set(key, { body, requestBody });
    return sendText(response, 200, body);
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    effects: (resourceId) => (resourceId ? effectsByResource.get(resourceId) ?? 0 : [...effectsByResource.values()].reduce((a, b) => a + b, 0)),
    requests: () => requestCount,
    failNext: (resourceId, count, status = 503) => void failures.set(resourceId, { count, status }),
    setDelay: (ms) => void (delayMs = ms),
    answerNext: (resourceId, count, body) => void failures.set(resourceId, { count, status: 200, body }),
    keys: () => byKey,
    setChaos: (next) => void (chaos = next),
    injected: () => ({ ...injected }),
    rejectedKeys: () => rejected,
    stop: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** The request body as JSON, or `undefined`: the API answers what it can rather than judging the caller's body. */
function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendText(response, status, JSON.stringify(body), headers);
}

/** Sends `text` as is, so a stored or injected answer goes out byte for byte. */
function sendText(response: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(text);
}
