/**
 * Seeded poison-message fuzzer for the chaos run, on the account example's messages (the envelope
 * and its payloads): bodies a producer bug, a hostile client or a
 * newer producer could put on the jobs queue, each paired with the fate the worker owes it. The
 * pairing is the contract the run checks: every poison in the DLQ with exactly its reason (the
 * run finds it by its exact body, so bodies are unique), every valid one applied once.
 * Deterministic for a seed, so a failing run can be replayed from its logged seed.
 */
import { CURRENT_SCHEMA_VERSION, SUPPORTED_MAJOR_VERSIONS } from '@ballast-stack/ballast';
import { REASONS, type Reason } from '@ballast-stack/ballast';
import { seededRandom } from '@ballast-stack/ballast/local';
import { DEFAULT_MAX_MESSAGE_BYTES } from '@ballast-stack/ballast/producer';
import { JOB_TYPES } from '../schemas.ts';

/** The families of bad (and deliberately awkward but valid) bodies; see {@link poisonMessages}. */
export const POISON_KINDS = {
  deepNesting: 'deep-nesting',
  nearLimitBody: 'near-limit-body',
  wrongTypes: 'wrong-types',
  bigNumber: 'big-number',
  prototypeKeys: 'prototype-keys',
  loneSurrogate: 'lone-surrogate',
  unknownType: 'unknown-type',
  unknownMajor: 'unknown-major',
  notJson: 'not-json',
} as const;
export type PoisonKind = (typeof POISON_KINDS)[keyof typeof POISON_KINDS];

/** Size bounds of the generated bodies, in UTF-8 bytes (what SQS counts). */
export const POISON_LIMITS = {
  /** Exclusive bound on every body: the SQS limit less 1 KiB for the sender's message attributes. */
  maxBodyBytes: DEFAULT_MAX_MESSAGE_BYTES - 1_024,
  /** Near-limit bodies are at least 250 KiB. */
  nearLimitMinBytes: 250 * 1_024,
  /**
   * Inclusive bound on large bodies headed for the DLQ: the worker's copy adds six `ballast.*`
   * attributes (the error text alone up to 1,024 characters), which must still fit beside them.
   */
  deadLetterMaxBodyBytes: DEFAULT_MAX_MESSAGE_BYTES - 8_192,
} as const;

/** A body that must be applied like any job: the chaos run counts it with the valid traffic. */
export interface ValidMessage {
  readonly kind: PoisonKind;
  /** Which case of the kind, e.g. `amount-string`: for the run's report. */
  readonly variant: string;
  readonly body: string;
  readonly valid: true;
  readonly expectedReason?: undefined;
  /** The idempotency key a worker reads from the body, when it holds one. */
  readonly idempotencyKey?: string;
}

/** A body the worker must dead-letter with `expectedReason` (at once if fatal, else on the last receive). */
export interface PoisonedMessage {
  readonly kind: PoisonKind;
  readonly variant: string;
  readonly body: string;
  readonly valid: false;
  readonly expectedReason: Reason;
  /** The idempotency key a worker could read from the body, when it holds one: no effect may exist for it. */
  readonly idempotencyKey?: string;
}

export type PoisonMessage = ValidMessage | PoisonedMessage;

export interface PoisonOptions {
  /** Any safe integer; log it, it replays the run. */
  readonly seed: number;
  /** How many messages; every kind appears once in each run of nine. */
  readonly count: number;
  /** Accounts the envelopes name; valid near-limit sync-profile jobs need them to exist. */
  readonly resourceIds: readonly string[];
}

/**
 * Builds `count` messages, kinds round-robin in a seeded order within each run of nine, each with
 * random variations. Ids are `poison-<seed>-<n>`. Bodies are written as JSON text by hand where
 * a value cannot say it (`__proto__` keys, number literals beyond doubles, lone surrogates).
 *
 * @throws Error naming the option, the value received and the fix
 * @example
 * import { poisonMessages } from '../workloads/accounts/local/poison.ts';
 * for (const poison of poisonMessages({ seed, count: 100, resourceIds: ['acc-001'] })) await send(poison.body);
 */
export function poisonMessages(options: PoisonOptions): PoisonMessage[] {
  validate(options);
  const random = seededRandom(options.seed);
  const kinds = Object.values(POISON_KINDS);
  const messages: PoisonMessage[] = [];
  let round: PoisonKind[] = [];
  for (let n = 0; n < options.count; n += 1) {
    if (round.length === 0) round = shuffle(kinds, random);
    const kind = round.pop() as PoisonKind;
    const id = `poison-${options.seed}-${n}`;
    const context: Context = {
      n, id, random,
      resourceId: pick(random, options.resourceIds),
      producedAt: new Date(BASE_PRODUCED_AT_MS + n * 1_000).toISOString(),
      int: (min, max) => min + Math.floor(random() * (max - min + 1)),
      pick: (values) => pick(random, values),
    };
    const variant = pick(random, VARIANTS[kind]);
    const { body, reason } = variant.build(context);
    const idempotencyKey = keyIn(body);
    const common = { kind, variant: variant.name, body, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) };
    messages.push(reason === undefined ? { ...common, valid: true } : { ...common, valid: false, expectedReason: reason });
  }
  return messages;
}

interface Context {
  readonly n: number;
  readonly id: string;
  readonly resourceId: string;
  readonly producedAt: string;
  readonly random: () => number;
  /** Uniform integer in [min, max]. */
  readonly int: (min: number, max: number) => number;
  readonly pick: <T>(values: readonly T[]) => T;
}
interface Variant {
  readonly name: string;
  /** `reason` undefined: a valid job. */
  readonly build: (context: Context) => { body: string; reason: Reason | undefined };
}
/** A JSON object member as raw text: `[name, json]`. Arrays, not object literals, so `__proto__` stays a key. */
type Member = readonly [name: string, json: string];

const BASE_PRODUCED_AT_MS = Date.UTC(2026, 0, 1);
const PRODUCER_VERSION = 'chaos-poison';
const BALANCE_TYPES = [JOB_TYPES.credit, JOB_TYPES.debit];
const ALL_TYPES = Object.values(JOB_TYPES);
const SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff', '\udc00\ud800'];

const text = JSON.stringify;
const bytes = (body: string) => Buffer.byteLength(body, 'utf8');
const object = (members: readonly Member[]) => `{${members.map(([name, json]) => `${text(name)}:${json}`).join(',')}}`;

interface EnvelopeEdit {
  readonly type?: string;
  /** Raw JSON per field; `undefined` leaves the field out. */
  readonly replace?: Readonly<Record<string, string | undefined>>;
  /** Members written before the standard ones (the `__proto__` cases). */
  readonly prepend?: readonly Member[];
}

/** A v1 envelope as JSON text around a raw payload, the fields in `createEnvelope`'s order. */
function envelope(context: Context, payloadJson: string, edit: EnvelopeEdit = {}): string {
  const standard: Member[] = [
    ['schemaVersion', text(CURRENT_SCHEMA_VERSION)],
    ['type', text(edit.type ?? JOB_TYPES.credit)],
    ['jobId', text(context.id)],
    ['idempotencyKey', text(context.id)],
    ['resourceId', text(context.resourceId)],
    ['traceId', text(context.id)],
    ['producedAt', text(context.producedAt)],
    ['producerVersion', text(PRODUCER_VERSION)],
    ['payload', payloadJson],
  ];
  const replace = edit.replace ?? {};
  const members = standard.flatMap(([name, json]): Member[] => {
    if (!Object.hasOwn(replace, name)) return [[name, json]];
    const replaced = replace[name];
    return replaced === undefined ? [] : [[name, replaced]];
  });
  return object([...(edit.prepend ?? []), ...members]);
}

const fatal = (body: string, reason: Reason) => ({ body, reason });
const amountOf = (context: Context) => context.int(1, 1_000);
const balance = (context: Context) => context.pick(BALANCE_TYPES);
/** A well-formed envelope of a known type whose payload fails that type's schema. */
const badPayload = (name: string, payloadJson: (c: Context) => string, types: readonly string[] = BALANCE_TYPES): Variant => ({
  name, build: (c) => fatal(envelope(c, payloadJson(c), { type: c.pick(types) }), REASONS.invalidPayload),
});
/** A well-formed credit except for the fields replaced. */
const badEnvelope = (name: string, replace: (c: Context) => Record<string, string | undefined>): Variant => ({
  name, build: (c) => fatal(envelope(c, text({ amount: amountOf(c) }), { replace: replace(c) }), REASONS.invalidEnvelope),
});

const VARIANTS: Readonly<Record<PoisonKind, readonly Variant[]>> = {
  // The parser refuses payloads deeper than DynamoDB's 32 levels. `{"a":` costs 6 bytes a level
  // and cannot reach 90,000 levels in 256 KiB; `[` costs 2, so the deepest draws nest arrays.
  [POISON_KINDS.deepNesting]: [{
    name: 'nested',
    build(c) {
      const depth = c.int(1_000, 90_000);
      const type = c.pick(ALL_TYPES);
      const head = type === JOB_TYPES.syncProfile ? `"reason":${text(`deep ${c.id}`)}` : `"amount":${amountOf(c)}`;
      const nested = (open: string, close: string) => envelope(c, `{${head},"nest":${open.repeat(depth)}0${close.repeat(depth)}}`, { type });
      const objectsFit = bytes(envelope(c, `{${head},"nest":0}`, { type })) + 6 * depth <= POISON_LIMITS.deadLetterMaxBodyBytes;
      return fatal(objectsFit && c.random() < 0.5 ? nested('{"a":', '}') : nested('[', ']'), REASONS.invalidEnvelope);
    },
  }],
  // Unknown payload fields are ignored, so these are valid jobs that test the size path, not poisons.
  [POISON_KINDS.nearLimitBody]: [JOB_TYPES.credit, JOB_TYPES.syncProfile].map((type): Variant => ({
    name: type,
    build(c) {
      const field = c.pick(['memo', 'attachment', 'notes']);
      const base = type === JOB_TYPES.credit ? { amount: amountOf(c) } : { reason: `near-limit ${c.id}` };
      const target = c.int(POISON_LIMITS.nearLimitMinBytes, POISON_LIMITS.maxBodyBytes - 1);
      const filler = fill(c, target - bytes(envelope(c, text({ ...base, [field]: '' }), { type })));
      return { body: envelope(c, text({ ...base, [field]: filler }), { type }), reason: undefined };
    },
  })),
  [POISON_KINDS.wrongTypes]: [
    badPayload('amount-string', (c) => `{"amount":${text(String(amountOf(c)))}}`),
    badPayload('amount-negative', (c) => `{"amount":${-amountOf(c)}}`),
    badPayload('amount-zero', () => '{"amount":0}'),
    badPayload('amount-fraction', (c) => `{"amount":${amountOf(c)}.5}`),
    badPayload('amount-missing', () => '{}'),
    badPayload('expected-version-negative', (c) => `{"amount":${amountOf(c)},"expectedVersion":-1}`),
    badPayload('reason-number', (c) => `{"reason":${c.n}}`, [JOB_TYPES.syncProfile]),
    badPayload('reason-too-long', (c) => `{"reason":${text('r'.repeat(c.int(201, 400)))}}`, [JOB_TYPES.syncProfile]),
    badEnvelope('payload-array', (c) => ({ payload: `[{"amount":${amountOf(c)}}]` })),
    badEnvelope('payload-null', () => ({ payload: 'null' })),
    badEnvelope('payload-double-encoded', (c) => ({ payload: text(text({ amount: amountOf(c) })) })),
    badEnvelope('resource-id-number', (c) => ({ resourceId: String(c.int(1, 99_999)) })),
    badEnvelope('job-id-missing', () => ({ jobId: undefined })),
    badEnvelope('idempotency-key-empty', () => ({ idempotencyKey: '""' })),
    badEnvelope('produced-at-epoch', (c) => ({ producedAt: String(BASE_PRODUCED_AT_MS + c.n) })),
    badEnvelope('schema-version-number', () => ({ schemaVersion: '1.0' })),
    badEnvelope('type-empty', () => ({ type: '""' })),
  ],
  // The text says more than a double holds: 2^53 + 2, 2^53 + 1 (rounds to 2^53), 1e309 (Infinity).
  [POISON_KINDS.bigNumber]: [
    badPayload('amount-2^53+2', () => '{"amount":9007199254740994}'),
    badPayload('amount-2^53+1', () => '{"amount":9007199254740993}'),
    badPayload('amount-negative-2^53+2', () => '{"amount":-9007199254740994}'),
    badPayload('amount-1e300', () => '{"amount":1e300}'),
    badPayload('amount-1e309', () => '{"amount":1e309}'),
    badPayload('amount-over-max', (c) => `{"amount":${1_000_000_000 + c.int(1, 1_000_000)}}`),
    badPayload('expected-version-2^53+2', (c) => `{"amount":${amountOf(c)},"expectedVersion":9007199254740994}`),
  ],
  // JSON.parse makes `__proto__` an own key (no prototype change); only inherited reads would see it.
  [POISON_KINDS.prototypeKeys]: [
    badPayload('payload-proto', (c) => `{"__proto__":{"amount":${amountOf(c)}}}`),
    badPayload('payload-constructor', (c) => `{"constructor":{"prototype":{"amount":${amountOf(c)}}}}`),
    ...(['type', 'schemaVersion', 'payload'] as const).map((field): Variant => ({
      name: `envelope-proto-${field}`,
      build(c) {
        const inherited = { type: text(JOB_TYPES.credit), schemaVersion: text(CURRENT_SCHEMA_VERSION), payload: `{"amount":${amountOf(c)}}` }[field];
        const prepend: Member[] = [['__proto__', object([[field, inherited]])]];
        return fatal(envelope(c, `{"amount":${amountOf(c)}}`, { replace: { [field]: undefined }, prepend }), REASONS.invalidEnvelope);
      },
    })),
  ],
  // JSON.stringify escapes a lone surrogate as `\udXXX`, so the body itself stays well-formed.
  [POISON_KINDS.loneSurrogate]: [
    badSurrogate('resource-id', (c, s) => ({ replace: { resourceId: text(c.resourceId + s) } })),
    badSurrogate('idempotency-key', (c, s) => ({ replace: { idempotencyKey: text(c.id + s) } })),
    badSurrogate('payload-string', (c, s) => ({ replace: { payload: text({ amount: amountOf(c), memo: `memo ${s}` }) } })),
    badSurrogate('payload-reason', (_c, s) => ({ type: JOB_TYPES.syncProfile, replace: { payload: text({ reason: `why ${s}` }) } })),
    badSurrogate('payload-key', (c, s) => ({ replace: { payload: `{"amount":${amountOf(c)},${text(s)}:1}` } })),
  ],
  [POISON_KINDS.unknownType]: ['account.explode', 'account.Credit', 'account.credit ', 'account.credit.v2', 'billing.refund', 'account.sync_profile']
    .map((type): Variant => ({ name: type, build: (c) => fatal(envelope(c, text({ amount: amountOf(c) }), { type }), REASONS.unknownJobType) })),
  // Transient: a newer worker may be rolling out, so it is retried and dead-lettered on the last receive.
  [POISON_KINDS.unknownMajor]: [{
    name: 'newer-major',
    build(c) {
      const majors = Array.from({ length: 98 }, (_, i) => i + 2).filter((major) => !SUPPORTED_MAJOR_VERSIONS.includes(major));
      const version = `${c.pick(majors)}.${c.int(0, 9)}`;
      const body = envelope(c, text({ amount: amountOf(c) }), { replace: { schemaVersion: text(version) } });
      return fatal(`${body.slice(0, -1)},"addedInMajor":{"priority":"high"}}`, REASONS.incompatibleVersion);
    },
  }],
  // Never the empty body: SQS refuses it before the worker could.
  [POISON_KINDS.notJson]: [
    notJson('truncated', (c, whole) => whole.slice(0, c.int(whole.indexOf(',"idempotencyKey"'), whole.length - 2))),
    notJson('trailing-comma', (_c, whole) => `${whole.slice(0, -1)},}`),
    notJson('single-quoted', (_c, whole) => whole.replaceAll('"', "'")),
    notJson('trailing-garbage', (_c, whole) => `${whole} x`),
    notJson('byte-order-mark', (_c, whole) => `\ufeff${whole}`),
    notJson('array-wrapped', (_c, whole) => `[${whole}]`),
    notJson('string-wrapped', (_c, whole) => text(whole)),
    notJson('text', (c) => text(`text ${c.id}`)),
    // `null` cannot carry an id: JSON whitespace after it spells n in binary, keeping it unique.
    notJson('null', (c) => `null\n${c.n.toString(2).replaceAll('0', ' ').replaceAll('1', '\t')}`),
  ],
};

function badSurrogate(name: string, edit: (c: Context, surrogate: string) => EnvelopeEdit): Variant {
  return {
    name,
    build(c) {
      const change = edit(c, c.pick(SURROGATES));
      return fatal(envelope(c, text({ amount: amountOf(c) }), change), REASONS.invalidEnvelope);
    },
  };
}

function notJson(name: string, mangle: (c: Context, whole: string) => string): Variant {
  return { name, build: (c) => fatal(mangle(c, envelope(c, text({ amount: amountOf(c) }))), REASONS.invalidEnvelope) };
}

/** Exactly `size` UTF-8 bytes of runs of 1- to 4-byte characters (no JSON escapes, no surrogates alone). */
function fill(c: Context, size: number): string {
  // Basic Multilingual Plane only: fauxqs refuses characters above U+FFFD (real SQS takes them).
  const alphabet = ['x', 'Q', '7', ' ', 'é', 'ß', '€', '中', 'ж', '漢'];
  const parts: string[] = [];
  let left = size;
  while (left >= 4 * 64) {
    const char = c.pick(alphabet);
    const run = c.int(1, 64);
    parts.push(char.repeat(run));
    left -= bytes(char) * run;
  }
  parts.push('x'.repeat(left));
  return parts.join('');
}

/** The idempotency key a worker would read from the body, if it parses to an object holding one. */
function keyIn(body: string): string | undefined {
  try {
    const value: unknown = JSON.parse(body);
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, 'idempotencyKey')) return undefined;
    const key = (value as { idempotencyKey: unknown }).idempotencyKey;
    return typeof key === 'string' && key !== '' ? key : undefined;
  } catch {
    return undefined;
  }
}

function pick<T>(random: () => number, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)] as T;
}

function shuffle<T>(values: readonly T[], random: () => number): T[] {
  const copy = [...values];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function validate(options: PoisonOptions): void {
  if (!Number.isSafeInteger(options.seed)) {
    throw new Error(`poisonMessages: seed must be a safe integer, got ${String(options.seed)}: pass e.g. Date.now() and log it`);
  }
  if (!Number.isSafeInteger(options.count) || options.count < 0) {
    throw new Error(`poisonMessages: count must be a non-negative integer, got ${String(options.count)}`);
  }
  if (options.resourceIds.length === 0) {
    throw new Error('poisonMessages: resourceIds is empty: pass the account ids the run seeded');
  }
  // 254: the lone-surrogate cases append up to two code units, and only the surrogate may be wrong.
  const bad = options.resourceIds.find((id) => typeof id !== 'string' || id.length === 0 || id.length > 254 || !id.isWellFormed());
  if (bad !== undefined) {
    throw new Error(`poisonMessages: resourceIds holds ${text(bad)}: each must be a well-formed string of 1 to 254 characters`);
  }
}
