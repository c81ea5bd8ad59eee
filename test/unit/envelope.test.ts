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
