import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createEnvelope, parseEnvelope, SUPPORTED_MAJOR_VERSIONS } from '../../shared/envelope/index.ts';
import { FatalError, IncompatibleVersionError, InvalidEnvelopeError, REASONS, TransientError } from '../../shared/errors/index.ts';

const valid = () => createEnvelope({ type: 'account.credit', resourceId: 'acc-1', payload: { amount: 5 }, producerVersion: '1.2.3' });

describe('envelope', () => {
  it('createEnvelope fills ids, trace, timestamp and the current schema version', () => {
    const envelope = valid();
    assert.equal(envelope.schemaVersion, '1.0');
    assert.equal(envelope.idempotencyKey, envelope.jobId, 'defaults the key to the job id');
    assert.match(envelope.traceId, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(envelope.producedAt)));
  });

  it('createEnvelope refuses an invalid envelope naming the field', () => {
    assert.throws(() => createEnvelope({ type: '', resourceId: 'acc-1', payload: {} }), /invalid envelope: type:/);
  });

  it('reads a newer minor version and ignores unknown fields', () => {
    const body = JSON.stringify({ ...valid(), schemaVersion: '1.7', addedInMinor7: { x: 1 } });
    const parsed = parseEnvelope(body);
    assert.equal(parsed.schemaVersion, '1.7');
    assert.equal('addedInMinor7' in parsed, false);
  });

  it('a malformed body is a fatal invalid-envelope error', () => {
    for (const body of ['not json', '{}', JSON.stringify({ ...valid(), idempotencyKey: undefined }), JSON.stringify({ ...valid(), payload: 'x' })]) {
      const error = (() => { try { parseEnvelope(body); } catch (e) { return e; } })();
      assert.ok(error instanceof InvalidEnvelopeError, `body ${body}`);
      assert.ok(error instanceof FatalError);
      assert.equal(error.reason, REASONS.invalidEnvelope);
    }
  });

  it('an unknown major version is a transient incompatible-version error, not invalid', () => {
    const body = JSON.stringify({ schemaVersion: '2.0', somethingNew: true });
    const error = (() => { try { parseEnvelope(body); } catch (e) { return e; } })();
    assert.ok(error instanceof IncompatibleVersionError);
    assert.ok(error instanceof TransientError);
    assert.match(error.message, /schemaVersion 2\.0: this worker reads major versions 1/);
  });

  it('lists the majors it supports', () => {
    assert.deepEqual(SUPPORTED_MAJOR_VERSIONS, [1]);
  });
});

describe('envelope bounds: what can never be committed is refused before anything walks it', () => {
  const body = (payloadText: string) => JSON.stringify({ ...valid(), payload: '__P__' }).replace('"__P__"', payloadText);

  it('a payload nested deeper than DynamoDB\'s 32 levels is invalid-envelope, without exhausting the stack', () => {
    for (const depth of [33, 1_000, 90_000]) {
      const nested = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      assert.throws(() => parseEnvelope(body(`{"amount":1,"x":${nested}}`)), (e: unknown) =>
        e instanceof InvalidEnvelopeError && /nests deeper than/.test(e.message), `depth ${depth}`);
    }
    // 31 levels below the payload is fine (the payload itself is one level, DynamoDB allows 32)
    const ok = `${'{"a":'.repeat(30)}1${'}'.repeat(30)}`;
    assert.equal(parseEnvelope(body(`{"amount":1,"x":${ok}}`)).resourceId, 'acc-1');
  });

  it('a lone surrogate anywhere (field, payload value or key) is invalid-envelope', () => {
    const lone = String.raw`\ud800`;
    const cases = [
      JSON.stringify({ ...valid(), resourceId: 'acc-X' }).replace('acc-X', `acc-${lone}`),
      body(`{"amount":1,"note":"a${lone}b"}`),
      body(`{"amount":1,"k${lone}":1}`),
    ];
    for (const text of cases) {
      assert.throws(() => parseEnvelope(text), (e: unknown) => e instanceof InvalidEnvelopeError && /well-formed/.test(e.message), text.slice(0, 80));
    }
  });
});
