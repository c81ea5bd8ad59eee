/**
 * A fault-injecting HTTP proxy in front of DynamoDB Local, for the chaos run.
 *
 * Why a proxy rather than SDK middleware or mocks: the code under test keeps its real client, its
 * real retry strategy and the SDK's real exception classes; only its endpoint changes. Injected
 * errors copy the service's wire format (status, `__type`, message, `x-amzn-ErrorType`, a 52-character
 * `x-amzn-RequestId`, `x-amz-crc32`), so the SDK parses them into `ProvisionedThroughputExceededException`,
 * `ThrottlingException`, `InternalServerError` or `TransactionCanceledException` and retries them as
 * it would against AWS. The SDK keys errors on the part of `__type` after `#`, so the foreign
 * namespace DynamoDB uses for throttling (`com.amazon.coral.availability`) maps all the same.
 *
 * What DynamoDB Local (1.25.1, the one in `amplify-dynamodb-simulator`) does with a retried
 * TransactWriteItems, proven by `test/integration/dynamodb-fault-proxy.test.ts`: it honours
 * `ClientRequestToken` as the service does. A repeat with the same token and the same items answers
 * 200 `{}` without evaluating the conditions again (an `attribute_not_exists(pk)` Put that was
 * applied, then lost, still succeeds for the retrying SDK); the same token with other items fails
 * with `IdempotentParameterMismatchException`. Single-item writes carry no token: a lost PutItem is
 * applied twice, and a conditional one fails its own condition on the SDK's retry.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import { httpRelay, listenLocal, parseJsonBody, readBytes, sendReply, withoutHopByHop, type HttpReply } from '../http.ts';
import { DYNAMODB_TARGET_PREFIX, dynamoDbOperation } from '../engines/index.ts';
import { withDefaults } from '../../shared/options/index.ts';
import { TransactionsInFlight } from './transaction-conflicts.ts';

/**
 * Every fault the proxy injects, in the order their rates are stacked on the one random draw.
 * `transactionConflict` is last so that, for operations it does not apply to, its share of draws
 * injects nothing and the other buckets keep their place.
 */
export const DYNAMODB_FAULT_KINDS = [
  'provisionedThroughputExceeded', 'throttling', 'internalServerError', 'lostResponse', 'stall', 'transactionConflict',
] as const;

export type DynamoDbFaultKind = (typeof DYNAMODB_FAULT_KINDS)[number];

/**
 * Shares (0–1) of eligible requests that get each fault; together at most 1. One draw per request
 * falls into at most one of them, so the shares add up and a seeded `random` replays a run.
 */
export interface DynamoDbFaultRates {
  /** Answered `ProvisionedThroughputExceededException` (400), not forwarded. @default 0 */
  provisionedThroughputExceeded?: number;
  /** Answered `ThrottlingException` (400), not forwarded. @default 0 */
  throttling?: number;
  /** Answered `InternalServerError` (500), not forwarded. @default 0 */
  internalServerError?: number;
  /** Forwarded and applied, then the client's connection is destroyed before it reads the answer. @default 0 */
  lostResponse?: number;
  /** Held for `stallMs`, then forwarded, even if the client gave up meanwhile (as a late packet would). @default 0 */
  stall?: number;
  /** TransactWriteItems only: answered `TransactionCanceledException` with one `TransactionConflict` reason. @default 0 */
  transactionConflict?: number;
}

export interface DynamoDbFaultProxyOptions {
  /** DynamoDB Local's endpoint, `http://host:port`. */
  readonly target: string;
  /** The starting rates; change them later through {@link DynamoDbFaultProxy.rates}. @default - no faults */
  readonly rates?: DynamoDbFaultRates;
  /** How long a stalled request is held before it is forwarded. @default 2_000 */
  readonly stallMs?: number;
  /** Source of the per-request draw in [0, 1); seed it to replay a chaos run. @default Math.random */
  readonly random?: () => number;
  /** Operations (`PutItem`, `TransactWriteItems`...) faults apply to; others are only forwarded. @default - every operation */
  readonly operations?: readonly string[];
  /** Narrows faults further, e.g. to heartbeats only: gets the operation and the parsed body. @default - every request */
  readonly match?: (operation: string, body: unknown) => boolean;
  /**
   * Answer as the service does when a write meets an item of a `TransactWriteItems` still in
   * progress, which DynamoDB Local does not: the transaction is cancelled with `TransactionConflict`
   * on that item, a `PutItem`/`UpdateItem`/`DeleteItem` gets `TransactionConflictException` (see
   * `transaction-conflicts.ts`). Independent of the rates: these are not drawn, they follow from timing.
   * @default false
   */
  readonly transactionConflicts?: boolean;
  /**
   * A hold chosen request by request, for every request that is forwarded (with a drawn stall, the
   * request waits for both): how long to keep it before forwarding (0: none), or a promise it waits
   * for (given the proxy's stop signal, which must end it). For faults aimed at one kind of write
   * rather than drawn over all, e.g. a lock holder's writes on one hot resource held until a newer
   * holder has taken the lock from it while it lives. @default - none
   */
  readonly holdOf?: (operation: string, body: unknown, stopping: AbortSignal) => number | Promise<void>;
  /**
   * A hold of the answer, chosen request by request: how long to keep what the target answered
   * (read or applied at once) before passing it on (0: none). A slow way back, e.g. a reader's
   * table read that returns after a newer commit, whose late cache fill must be refused.
   * @default - none
   */
  readonly holdAnswerOf?: (operation: string, body: unknown) => number;
  /**
   * Told of every request the target answered (lost answers included: the target applied them),
   * as each answer arrives. @default - nobody
   */
  readonly onAnswered?: (exchange: DynamoDbExchange) => void;
}

/**
 * A request the target answered. `sentAt` and `answeredAt` are ticks of one counter the proxy
 * advances as it forwards requests and gets answers: a request forwarded after another's answer
 * has a greater `sentAt` than that `answeredAt`, so the target must have applied it after.
 */
export interface DynamoDbExchange {
  readonly operation: string;
  /** The request's JSON body, as sent (attribute values in DynamoDB's wire form). */
  readonly request: unknown;
  readonly sentAt: number;
  readonly answeredAt: number;
  /** Epoch ms (this machine's clock, which the functions share) when the proxy forwarded it. */
  readonly sentAtMs: number;
  readonly status: number;
  /** The answer's body, as received (JSON; a cancellation's `CancellationReasons` among it), parsed only by who needs it. */
  readonly answerBody: Buffer;
}

export interface DynamoDbFaultProxy {
  /** `http://127.0.0.1:<port>`: the `endpoint` (or `AWS_ENDPOINT_URL_DYNAMODB`) for the code under test. */
  readonly endpoint: string;
  /**
   * The live rates. Deliberately mutable, so a chaos run changes the fault mix between phases without
   * moving clients to a new port. Each assignment is validated (0–1, total at most 1) and throws a
   * RangeError otherwise: lower one rate before raising another. Unknown keys throw a TypeError.
   */
  readonly rates: DynamoDbFaultRates;
  /** Faults injected so far, counted when drawn, in total or for one operation. */
  injected(operation?: string): Record<DynamoDbFaultKind, number>;
  /** Requests the target answered (including answers then lost on purpose). */
  forwarded(): number;
  /** Requests the target did not answer; the client got a 502 InternalServerError. */
  failed(): number;
  /** Requests refused for meeting a transaction in progress (with `transactionConflicts`), by operation. */
  conflicts(): Record<string, number>;
  /** Closes the server and every connection, cancels stalled requests (never forwarded). Idempotent. */
  stop(): Promise<void>;
}

const defaults = { stallMs: 2_000, random: Math.random } as const;

const NAMESPACE = 'com.amazonaws.dynamodb.v20120810';

/** The errors answered instead of forwarding, as DynamoDB sends them. */
const ERROR_REPLIES = {
  provisionedThroughputExceeded: {
    status: 400, type: `${NAMESPACE}#ProvisionedThroughputExceededException`,
    message: 'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
  },
  throttling: {
    status: 400, type: 'com.amazon.coral.availability#ThrottlingException',
    message: 'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html',
  },
  internalServerError: { status: 500, type: `${NAMESPACE}#InternalServerError`, message: 'Internal server error' },
} as const;

/**
 * Starts the proxy on a free loopback port.
 *
 * @example
 * import { startDynamoDbFaultProxy } from '../local/faults/index.ts';
 * const proxy = await startDynamoDbFaultProxy({ target: dynamodb.endpoint, rates: { lostResponse: 0.05 }, random: seeded(42) });
 * const client = new DynamoDBClient({ endpoint: proxy.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
 * proxy.rates.lostResponse = 0; // next phase: no more lost answers
 * await proxy.stop();
 */
export async function startDynamoDbFaultProxy(options: DynamoDbFaultProxyOptions): Promise<DynamoDbFaultProxy> {
  const config = withDefaults(defaults, options);
  const target = parseTarget(config.target);
  if (!Number.isSafeInteger(config.stallMs) || config.stallMs < 0) {
    throw new RangeError(`startDynamoDbFaultProxy: stallMs must be an integer >= 0; got ${config.stallMs}: give the hold time in milliseconds.`);
  }
  const rates = liveRates(config.rates ?? {});
  const operations = config.operations ? new Set(config.operations) : undefined;
  const counts = zeroCounts();
  const countsByOperation = new Map<string, Record<DynamoDbFaultKind, number>>();
  let forwarded = 0;
  let failed = 0;
  let tick = 0;
  const stopping = new AbortController();
  // Every in-flight forward and stall listens to it; a busy chaos run has far more than 10.
  setMaxListeners(0, stopping.signal);
  const relay = httpRelay(target, stopping.signal);
  const inFlight = config.transactionConflicts ? new TransactionsInFlight() : undefined;
  const conflicts: Record<string, number> = {};
  const keySchemas = new Map<string, Promise<readonly string[]>>();
  // DynamoDB Local checks no signature: the asking request's own credentials select its database.
  const keySchemaOf = (headers: IncomingHttpHeaders) => (tableName: string): Promise<readonly string[]> => {
    let names = keySchemas.get(tableName);
    if (!names) {
      names = describeKeySchema(tableName, headers);
      names.catch(() => keySchemas.delete(tableName));
      keySchemas.set(tableName, names);
    }
    return names;
  };

  const describeKeySchema = async (tableName: string, headers: IncomingHttpHeaders): Promise<readonly string[]> => {
    const body = Buffer.from(JSON.stringify({ TableName: tableName }));
    const reply = await post(body, { ...withoutHopByHop(headers), 'x-amz-target': `${DYNAMODB_TARGET_PREFIX}DescribeTable` });
    const table = parseJsonBody(reply.body) as { Table?: { KeySchema?: { AttributeName: string }[] } } | undefined;
    const names = table?.Table?.KeySchema?.map((key) => key.AttributeName);
    if (!names?.length) throw new Error(`DynamoDB fault proxy: no key schema for table ${tableName}: ${reply.body.toString('utf8').slice(0, 200)}`);
    return names;
  };

  const forward = (request: IncomingMessage, body: Buffer): Promise<HttpReply> =>
    post(body, withoutHopByHop(request.headers), request.method, request.url);

  const post = async (body: Buffer, headers: Record<string, string | string[]>, method?: string, path?: string): Promise<HttpReply> => {
    const reply = await relay.send(body, headers, method, path);
    forwarded += 1;
    return reply;
  };

  const count = (kind: DynamoDbFaultKind, operation: string) => {
    counts[kind] += 1;
    const forOperation = countsByOperation.get(operation) ?? zeroCounts();
    forOperation[kind] += 1;
    countsByOperation.set(operation, forOperation);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readBytes(request);
    const operation = dynamoDbOperation(request.headers['x-amz-target']);
    const parsed = operation === undefined ? undefined : parseJsonBody(body);
    const eligible = operation !== undefined && (operations?.has(operation) ?? true) && (config.match?.(operation, parsed) ?? true);
    const fault = eligible ? drawFault(rates, config.random(), operation, parsed) : undefined;
    if (fault && operation !== undefined) count(fault.kind, operation);
    try {
      if (fault?.kind === 'transactionConflict') return sendReply(response, conflictReply(fault.items, [fault.conflictAt]));
      if (fault && fault.kind in ERROR_REPLIES) return sendReply(response, errorReply(ERROR_REPLIES[fault.kind as keyof typeof ERROR_REPLIES]));
      // Every forwarded request is asked about (a held write's retry that drew a lost answer must be held too).
      const hold = operation !== undefined ? config.holdOf?.(operation, parsed, stopping.signal) ?? 0 : 0;
      const holdMs = Math.max(fault?.kind === 'stall' ? config.stallMs : 0, typeof hold === 'number' ? hold : 0);
      await Promise.all([holdMs > 0 ? delay(holdMs, undefined, { signal: stopping.signal }) : undefined, typeof hold === 'number' ? undefined : hold]);
      stopping.signal.throwIfAborted();
      // Checked when the request reaches the service, so after a stall.
      const check = inFlight && operation !== undefined ? await inFlight.check(operation, parsed, keySchemaOf(request.headers)) : undefined;
      if (check && check.conflicting.length > 0) {
        conflicts[operation as string] = (conflicts[operation as string] ?? 0) + 1;
        return sendReply(response, operation === 'TransactWriteItems'
          ? conflictReply(check.items, check.conflicting)
          : errorReply({ status: 400, type: `${NAMESPACE}#TransactionConflictException`, message: 'Transaction is ongoing for the item' }));
      }
      const release = check?.hold();
      const sentAt = (tick += 1);
      const sentAtMs = Date.now();
      const reply = await forward(request, body).finally(() => release?.());
      const answeredAt = (tick += 1);
      if (config.onAnswered && operation !== undefined) {
        // A watcher's bug must not turn an applied write into an error its client retries.
        try {
          config.onAnswered({ operation, request: parsed, sentAt, answeredAt, sentAtMs, status: reply.status, answerBody: reply.body });
        } catch (error) {
          console.error(`DynamoDB fault proxy: onAnswered threw: ${String(error)}`);
        }
      }
      if (fault?.kind === 'lostResponse') return void request.socket.destroy();
      const answerHoldMs = operation !== undefined ? config.holdAnswerOf?.(operation, parsed) ?? 0 : 0;
      if (answerHoldMs > 0) await delay(answerHoldMs, undefined, { signal: stopping.signal });
      sendReply(response, reply);
    } catch (error) {
      if (stopping.signal.aborted) return void request.socket.destroy();
      failed += 1;
      sendReply(response, errorReply({ status: 502, type: `${NAMESPACE}#InternalServerError`, message: `DynamoDB fault proxy: ${config.target} did not answer: ${String(error)}` }));
    }
  };

  // Only a throwing `match` or a client gone mid-body gets here.
  const server = await listenLocal((request, response) => handle(request, response).catch((error: unknown) => {
    sendReply(response, errorReply({ status: 500, type: `${NAMESPACE}#InternalServerError`, message: `DynamoDB fault proxy failed: ${String(error)}` }));
  }));
  let stopped: Promise<void> | undefined;
  return {
    endpoint: server.url,
    rates,
    injected: (operation) => ({ ...(operation === undefined ? counts : countsByOperation.get(operation) ?? zeroCounts()) }),
    forwarded: () => forwarded,
    failed: () => failed,
    conflicts: () => ({ ...conflicts }),
    stop: () => (stopped ??= (async () => {
      stopping.abort();
      await server.stop();
      relay.close();
    })()),
  };
}

/** The fault the draw `u` falls on, if any; for a transaction conflict, how many items and which one conflicts. */
function drawFault(rates: DynamoDbFaultRates, u: number, operation: string, body: unknown):
  { kind: DynamoDbFaultKind; items: number; conflictAt: number } | undefined {
  let floor = 0;
  for (const kind of DYNAMODB_FAULT_KINDS) {
    const rate = rates[kind] ?? 0;
    if (u >= floor && u < floor + rate) {
      if (kind !== 'transactionConflict') return { kind, items: 0, conflictAt: 0 };
      const items = transactItemCount(operation, body);
      if (items === 0) return undefined;
      // Reuse the draw's position inside the bucket: reproducible without a second draw.
      return { kind, items, conflictAt: Math.min(items - 1, Math.floor(((u - floor) / rate) * items)) };
    }
    floor += rate;
  }
  return undefined;
}

function transactItemCount(operation: string, body: unknown): number {
  if (operation !== 'TransactWriteItems' || typeof body !== 'object' || body === null) return 0;
  const items = (body as { TransactItems?: unknown }).TransactItems;
  return Array.isArray(items) ? items.length : 0;
}

/** Rates whose every assignment is checked, so a chaos run cannot silently ask for more than 100%. */
function liveRates(initial: DynamoDbFaultRates): DynamoDbFaultRates {
  const values = zeroCounts();
  const rates: DynamoDbFaultRates = {};
  for (const kind of DYNAMODB_FAULT_KINDS) {
    Object.defineProperty(rates, kind, {
      enumerable: true,
      get: () => values[kind],
      set: (value: number | undefined) => {
        const rate = value ?? 0;
        if (!(rate >= 0 && rate <= 1)) {
          throw new RangeError(`DynamoDB fault proxy: rates.${kind} must be a number from 0 to 1; got ${value}: give a share of requests.`);
        }
        const total = DYNAMODB_FAULT_KINDS.reduce((sum, other) => sum + (other === kind ? rate : values[other]), 0);
        if (total > 1 + 1e-9) {
          throw new RangeError(`DynamoDB fault proxy: rates must add up to at most 1; setting rates.${kind} to ${rate} makes ${total}: lower another rate first.`);
        }
        values[kind] = rate;
      },
    });
  }
  Object.seal(rates);
  for (const [kind, value] of Object.entries(initial)) {
    if (!(DYNAMODB_FAULT_KINDS as readonly string[]).includes(kind)) {
      throw new TypeError(`startDynamoDbFaultProxy: rates.${kind} is not a fault; use one of ${DYNAMODB_FAULT_KINDS.join(', ')}.`);
    }
    (rates as Record<string, unknown>)[kind] = value;
  }
  return rates;
}

function parseTarget(target: string): URL {
  const url = URL.canParse(target) ? new URL(target) : undefined;
  if (url?.protocol !== 'http:' || url.pathname !== '/' || url.search !== '') {
    throw new TypeError(`startDynamoDbFaultProxy: target must be an http://host:port URL; got ${target}: pass DynamoDB Local's endpoint.`);
  }
  return url;
}

function zeroCounts(): Record<DynamoDbFaultKind, number> {
  return Object.fromEntries(DYNAMODB_FAULT_KINDS.map((kind) => [kind, 0])) as Record<DynamoDbFaultKind, number>;
}

/** An error as DynamoDB writes it: JSON 1.0 body with `__type`, the type again in `x-amzn-ErrorType`. */
function errorReply(error: { status: number; type: string; message: string }): HttpReply {
  return jsonReply(error.status, error.type, { __type: error.type, message: error.message });
}

/** DynamoDB's TransactionCanceledException: capitalised `Message`, one reason per item. */
function conflictReply(items: number, conflictAt: readonly number[]): HttpReply {
  const reasons = Array.from({ length: items }, (_, index) => (conflictAt.includes(index)
    ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
    : { Code: 'None' }));
  const type = `${NAMESPACE}#TransactionCanceledException`;
  return jsonReply(400, type, {
    __type: type,
    CancellationReasons: reasons,
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
  });
}

function jsonReply(status: number, type: string, payload: object): HttpReply {
  const body = Buffer.from(JSON.stringify(payload));
  const [namespace, name] = type.split('#');
  return {
    status,
    body,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-RequestId': requestId(),
      'x-amzn-ErrorType': `${name}:http://internal.amazon.com/coral/${namespace}/`,
      'x-amz-crc32': String(crc32(body)),
    },
  };
}

/** 52 characters of [A-Z0-9], the shape of DynamoDB's request ids. */
function requestId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return Array.from(randomBytes(52), (byte) => alphabet[byte % alphabet.length]).join('');
}
