import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { safeParse, type Schema } from '../../../shared/validation/index.ts';
import { ENVELOPE_V1, SUPPORTED_MAJOR_VERSIONS } from '../../../shared/envelope/index.ts';
import { BALANCE_CHANGE, JOB_TYPES, SYNC_PROFILE } from '../../../workloads/accounts/index.ts';
import { REASONS } from '../../../shared/errors/index.ts';
import { POISON_KINDS, POISON_LIMITS, poisonMessages, type PoisonKind, type PoisonMessage } from '../../../workloads/accounts/local/poison.ts';
import { seededRandom } from '../../../local/chaos/random.ts';

const resourceIds = ['acc-001', 'acc-002', 'acc-003'];
const generate = (seed: number, count = 100) => poisonMessages({ seed, count, resourceIds });
const messages = generate(7);
const ofKind = (kind: PoisonKind) => messages.filter((message) => message.kind === kind);
const bytes = (body: string) => Buffer.byteLength(body, 'utf8');

const PAYLOAD_SCHEMAS: Readonly<Record<string, Schema>> = {
  [JOB_TYPES.credit]: BALANCE_CHANGE,
  [JOB_TYPES.debit]: BALANCE_CHANGE,
  [JOB_TYPES.syncProfile]: SYNC_PROFILE,
};

/** Deepest bracket nesting of a JSON text, by one linear scan that skips string contents. */
function maxDepth(body: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < body.length; i += 1) {
    const char = body[i];
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') deepest = Math.max(deepest, (depth += 1));
    else if (char === '}' || char === ']') depth -= 1;
  }
  return deepest;
}

/** What the envelope schema and then the job's payload schema say of a body, as the worker would order them. */
function verdict(message: PoisonMessage): 'valid' | 'invalid-envelope' | 'invalid-payload' | 'unknown-job-type' {
  const envelope = ENVELOPE_V1.safeParse(JSON.parse(message.body));
  if (!envelope.success) return 'invalid-envelope';
  const schema = PAYLOAD_SCHEMAS[envelope.data.type];
  if (!schema) return 'unknown-job-type';
  const raw = (JSON.parse(message.body) as { payload: unknown }).payload;
  const accepted = safeParse(schema, envelope.data.payload).success;
  assert.equal(safeParse(schema, raw).success, accepted, `zod's copy and the raw payload agree for ${message.variant}`);
  return accepted ? 'valid' : 'invalid-payload';
}

describe('seededRandom', () => {
  it('repeats its sequence for a seed, differs across seeds and stays in [0, 1)', () => {
    const take = (seed: number) => { const random = seededRandom(seed); return Array.from({ length: 1_000 }, () => random()); };
    assert.deepEqual(take(1), take(1));
    assert.notDeepEqual(take(1), take(2));
    assert.ok(take(3).every((value) => value >= 0 && value < 1));
  });
});

describe('poisonMessages', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    assert.deepEqual(generate(7), messages);
    const sequence = (list: PoisonMessage[]) => list.map((message) => `${message.kind}/${message.variant}`);
    assert.notDeepEqual(sequence(generate(8)), sequence(messages));
  });

  it('covers every kind in 100 messages, and each in every run of nine', () => {
    assert.deepEqual(new Set(messages.map((message) => message.kind)), new Set(Object.values(POISON_KINDS)));
    for (let start = 0; start + 9 <= messages.length; start += 9) {
      assert.equal(new Set(messages.slice(start, start + 9).map((message) => message.kind)).size, 9, `run at ${start}`);
    }
  });

  it('keeps every body under the SQS limit less 1 KiB, unique, and well-formed text', () => {
    assert.equal(new Set(messages.map((message) => message.body)).size, messages.length);
    for (const message of messages) {
      assert.ok(bytes(message.body) < POISON_LIMITS.maxBodyBytes, `${message.kind}: ${bytes(message.body)} bytes`);
      assert.ok(message.body.length > 0, 'SQS refuses empty bodies');
      assert.ok(message.body.isWellFormed(), `${message.kind}/${message.variant}: the body itself encodes to UTF-8 losslessly`);
      if (!message.valid) assert.ok(bytes(message.body) <= POISON_LIMITS.deadLetterMaxBodyBytes, 'leaves room for the DLQ attributes');
    }
  });

  it('names each message poison-<seed>-<n> and reports the idempotency key the body holds', () => {
    messages.forEach((message, n) => {
      if (message.variant !== 'null') assert.ok(message.body.includes(`poison-7-${n}`), `${message.kind}/${message.variant}`);
    });
    const credit = messages.find((message) => message.kind === POISON_KINDS.unknownType);
    assert.match(credit?.idempotencyKey ?? '', /^poison-7-\d+$/);
    assert.ok(ofKind(POISON_KINDS.notJson).filter((m) => m.variant !== 'string-wrapped').every((m) => m.idempotencyKey === undefined));
  });

  it('pairs each kind with its DLQ reason, and only near-limit bodies are valid', () => {
    for (const message of messages) {
      assert.equal(message.valid, message.kind === POISON_KINDS.nearLimitBody, message.kind);
      if (message.valid) assert.equal(message.expectedReason, undefined);
    }
    const reasons = (kind: PoisonKind) => new Set(ofKind(kind).map((message) => message.expectedReason));
    assert.deepEqual(reasons(POISON_KINDS.deepNesting), new Set([REASONS.invalidEnvelope]));
    assert.deepEqual(reasons(POISON_KINDS.loneSurrogate), new Set([REASONS.invalidEnvelope]));
    assert.deepEqual(reasons(POISON_KINDS.notJson), new Set([REASONS.invalidEnvelope]));
    assert.deepEqual(reasons(POISON_KINDS.unknownMajor), new Set([REASONS.incompatibleVersion]));
    assert.deepEqual(reasons(POISON_KINDS.unknownType), new Set([REASONS.unknownJobType]));
    assert.deepEqual(reasons(POISON_KINDS.bigNumber), new Set([REASONS.invalidPayload]));
  });

  it('the reason of every schema-decided kind is what the envelope and job schemas say', () => {
    const many = generate(11, 900);
    const decided = [POISON_KINDS.wrongTypes, POISON_KINDS.bigNumber, POISON_KINDS.prototypeKeys, POISON_KINDS.unknownType];
    const variants = new Set<string>();
    for (const message of many.filter((m) => (decided as readonly string[]).includes(m.kind))) {
      assert.equal(verdict(message), message.expectedReason, `${message.kind}/${message.variant}: ${message.body}`);
      variants.add(`${message.kind}/${message.variant}`);
    }
    assert.ok(variants.size >= 30, `only ${variants.size} variants drawn`);
    for (const message of many.filter((m) => m.kind === POISON_KINDS.nearLimitBody)) assert.equal(verdict(message), 'valid');
  });

  it('prototype-key payloads hold no own amount, and proto envelopes lack the field their __proto__ offers', () => {
    for (const message of generate(12, 400).filter((m) => m.kind === POISON_KINDS.prototypeKeys)) {
      const parsed = JSON.parse(message.body) as Record<string, unknown>;
      if (message.variant.startsWith('envelope-proto-')) {
        const field = message.variant.slice('envelope-proto-'.length);
        assert.ok(Object.hasOwn(parsed, '__proto__') && !Object.hasOwn(parsed, field), message.body);
        assert.equal(Object.getPrototypeOf(parsed), Object.prototype, 'JSON.parse made __proto__ a plain key');
      } else {
        assert.ok(!Object.hasOwn(parsed.payload as object, 'amount'), message.body);
      }
    }
  });

  it('deep-nesting bodies nest 1,000 to 90,000 levels below the payload of a valid envelope', () => {
    const deep = generate(13, 450).filter((m) => m.kind === POISON_KINDS.deepNesting);
    const depths = deep.map((message) => maxDepth(message.body) - 2);
    assert.ok(depths.every((depth) => depth >= 1_000 && depth <= 90_000), String(depths));
    assert.ok(depths.some((depth) => depth > 50_000), 'reaches depths only arrays fit');
    assert.ok(deep.some((m) => m.body.includes('{"a":{"a":')) && deep.some((m) => m.body.includes('[[[')), 'both shapes');
    for (const message of deep) {
      const envelope = JSON.parse(message.body) as Record<string, unknown>;
      const { payload, ...rest } = envelope;
      assert.ok(ENVELOPE_V1.safeParse({ ...rest, payload: {} }).success, 'only the payload is wrong');
      assert.ok(Object.values(JOB_TYPES).includes(envelope.type as never));
      assert.ok(Object.hasOwn(payload as object, 'nest'));
    }
  });

  it('near-limit bodies are 250 KiB up to the limit less 1 KiB, credits and sync-profiles', () => {
    const large = generate(14, 180).filter((m) => m.kind === POISON_KINDS.nearLimitBody);
    for (const message of large) {
      assert.ok(bytes(message.body) >= POISON_LIMITS.nearLimitMinBytes && bytes(message.body) < POISON_LIMITS.maxBodyBytes, `${bytes(message.body)}`);
      assert.ok(bytes(message.body) > message.body.length, 'multi-byte characters count as their UTF-8 bytes');
    }
    assert.deepEqual(new Set(large.map((m) => m.variant)), new Set([JOB_TYPES.credit, JOB_TYPES.syncProfile]));
  });

  it('lone-surrogate bodies are ASCII-escaped and decode to a string or key that is not well-formed', () => {
    for (const message of generate(15, 450).filter((m) => m.kind === POISON_KINDS.loneSurrogate)) {
      assert.match(message.body, /\\ud[89a-f][0-9a-f]{2}/);
      let illFormed = false;
      JSON.parse(message.body, (key, value: unknown) => {
        if (!key.isWellFormed() || (typeof value === 'string' && !value.isWellFormed())) illFormed = true;
        return value;
      });
      assert.ok(illFormed, message.body);
      const { payload, ...rest } = JSON.parse(message.body) as Record<string, unknown>;
      assert.ok(ENVELOPE_V1.safeParse({ ...rest, payload }).success, 'otherwise a valid envelope');
    }
  });

  it('unknown-major bodies carry a <major>.<minor> this code does not read; not-json bodies are not envelope objects', () => {
    for (const message of generate(16, 450)) {
      if (message.kind === POISON_KINDS.unknownMajor) {
        const version = (JSON.parse(message.body) as { schemaVersion: string }).schemaVersion;
        assert.match(version, /^\d+\.\d+$/);
        assert.ok(!SUPPORTED_MAJOR_VERSIONS.includes(Number(version.split('.')[0])), version);
      }
      if (message.kind === POISON_KINDS.notJson) {
        let value: unknown;
        try { value = JSON.parse(message.body); } catch { continue; }
        assert.ok(value === null || typeof value !== 'object' || Array.isArray(value), message.body);
      }
    }
  });

  it('refuses bad options naming the field', () => {
    assert.throws(() => poisonMessages({ seed: 1.5, count: 1, resourceIds }), /seed must be a safe integer, got 1.5/);
    assert.throws(() => poisonMessages({ seed: 1, count: -1, resourceIds }), /count must be a non-negative integer/);
    assert.throws(() => poisonMessages({ seed: 1, count: 1, resourceIds: [] }), /resourceIds is empty/);
    assert.throws(() => poisonMessages({ seed: 1, count: 1, resourceIds: ['a\ud800'] }), /resourceIds holds/);
  });
});
