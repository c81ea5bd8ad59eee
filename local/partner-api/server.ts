import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../http.ts';

/**
 * A small stand-in for the external partner profile API that `account.sync-profile` calls, used
 * by tests and the local cloud. Like a well-behaved payment or CRM API it honours the
 * `Idempotency-Key` header: a repeated key gets the stored answer back (with
 * `Idempotent-Replayed: true`) and causes no second effect; the same key with a different body is
 * a 422. It also remembers the highest `X-Fencing-Token` per account and refuses lower ones (409),
 * which is how an external system protects itself from a stalled former lock holder.
 */
export interface PartnerApi {
  readonly url: string;
  /** Side effects actually performed (first-time keys only), by account id. */
  effects(accountId?: string): number;
  /** Every request received, including replays. */
  requests(): number;
  /** The next `count` calls for `accountId` (or any account with '*') answer `status`. */
  failNext(accountId: string, count: number, status?: number): void;
  /** Delays every answer by `delayMs` from now on. */
  setDelay(delayMs: number): void;
  /** The next `count` calls for `accountId` (or any account with '*') answer 200 with `body` as is (e.g. `'[1]'`), and perform no effect. */
  answerNext(accountId: string, count: number, body: string): void;
  /**
   * Per Idempotency-Key: requests that reached the handler with it (replays included) and effects
   * performed for it. An effect count above 1 would be a double external effect; calls above 1
   * are replays the key absorbed (a worker that called again).
   */
  keys(): ReadonlyMap<string, { readonly calls: number; readonly effects: number }>;
  /** Random faults from now on (the chaos run's partner); see {@link PartnerChaos}. */
  setChaos(chaos: PartnerChaos | undefined): void;
  /** Faults {@link setChaos} injected so far, by kind. */
  injected(): Readonly<Record<PartnerFaultKind, number>>;
  /** Idempotency-Keys that were answered 200 with a non-object body (their sync is rightly `partner-rejected`). */
  rejectedKeys(): ReadonlySet<string>;
  stop(): Promise<void>;
}

/** What a misbehaving partner does to one request. */
export const PARTNER_FAULTS = { serverError: 'server-error', slow: 'slow', hang: 'hang', nonObject: 'non-object' } as const;
export type PartnerFaultKind = (typeof PARTNER_FAULTS)[keyof typeof PARTNER_FAULTS];

/**
 * Per-request fault rates, drawn once per request from `random` (seeded in the chaos run). Slow
 * and hung requests still take effect when they finally run, as a real slow partner's do: the
 * caller that gave up must not cause a second effect when it retries.
 */
export interface PartnerChaos {
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
  /** 200 with a JSON array or string, and no effect. @default 0 */
  readonly nonObjectRate?: number;
}

interface Stored {
  readonly body: string;
  readonly requestBody: string;
}

export async function startPartnerApi(options: { port?: number } = {}): Promise<PartnerApi> {
  const answers = new Map<string, Stored>();
  const effectsByAccount = new Map<string, number>();
  const fences = new Map<string, number>();
  const failures = new Map<string, { count: number; status: number; body?: string }>();
  const byKey = new Map<string, { calls: number; effects: number }>();
  let requestCount = 0;
  let delayMs = 0;
  let chaos: PartnerChaos | undefined;
  const injected: Record<PartnerFaultKind, number> = { 'server-error': 0, slow: 0, hang: 0, 'non-object': 0 };
  const rejected = new Set<string>();

  const drawFault = (): PartnerFaultKind | undefined => {
    if (!chaos) return undefined;
    let roll = chaos.random();
    for (const [kind, rate] of [
      [PARTNER_FAULTS.serverError, chaos.serverErrorRate], [PARTNER_FAULTS.slow, chaos.slowRate],
      [PARTNER_FAULTS.hang, chaos.hangRate], [PARTNER_FAULTS.nonObject, chaos.nonObjectRate],
    ] as const) {
      roll -= rate ?? 0;
      if (roll < 0) {
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
    const match = /^\/profiles\/([^/]+)\/sync$/.exec(request.url ?? '');
    if (request.method !== 'POST' || !match?.[1]) return send(response, 404, { error: 'not found' });
    const accountId = decodeURIComponent(match[1]);
    const failure = failures.get(accountId) ?? failures.get('*');
    if (failure && failure.count > 0) {
      failure.count -= 1;
      if (failure.body !== undefined) {
        response.writeHead(failure.status, { 'content-type': 'application/json' });
        return void response.end(failure.body);
      }
      return send(response, failure.status, { error: 'injected failure' });
    }
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return send(response, 400, { error: 'Idempotency-Key header is required' });
    const seen = byKey.get(key) ?? { calls: 0, effects: 0 };
    seen.calls += 1;
    byKey.set(key, seen);
    const fault = drawFault();
    if (fault === PARTNER_FAULTS.serverError) return send(response, 503, { error: 'injected: partner overloaded' });
    if (fault === PARTNER_FAULTS.nonObject) {
      rejected.add(key);
      response.writeHead(200, { 'content-type': 'application/json' });
      return void response.end((chaos?.random() ?? 0) < 0.5 ? '["not","a","profile"]' : '"ok"');
    }
    if (fault === PARTNER_FAULTS.slow || fault === PARTNER_FAULTS.hang) {
      await new Promise((resolve) => setTimeout(resolve, fault === PARTNER_FAULTS.slow ? chaos?.slowMs ?? 2_500 : chaos?.hangMs ?? 8_000));
    }
    const fence = Number(request.headers['x-fencing-token'] ?? 0);
    if (fence < (fences.get(accountId) ?? 0)) return send(response, 409, { error: `fencing token ${fence} is stale` });
    fences.set(accountId, fence);

    const stored = answers.get(key);
    if (stored) {
      if (stored.requestBody !== requestBody) return send(response, 422, { error: 'Idempotency-Key reused with a different request' });
      return send(response, 200, JSON.parse(stored.body), { 'idempotent-replayed': 'true' });
    }
    const revision = (effectsByAccount.get(accountId) ?? 0) + 1;
    effectsByAccount.set(accountId, revision);
    seen.effects += 1;
    const profile = { accountId, revision, tier: ['bronze', 'silver', 'gold'][revision % 3], syncedBy: key };
    answers.set(key, { body: JSON.stringify(profile), requestBody });
    return send(response, 200, profile);
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    effects: (accountId) => (accountId ? effectsByAccount.get(accountId) ?? 0 : [...effectsByAccount.values()].reduce((a, b) => a + b, 0)),
    requests: () => requestCount,
    failNext: (accountId, count, status = 503) => void failures.set(accountId, { count, status }),
    setDelay: (ms) => void (delayMs = ms),
    answerNext: (accountId, count, body) => void failures.set(accountId, { count, status: 200, body }),
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


function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}
