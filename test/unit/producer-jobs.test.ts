import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildJob, creditJob, debitJob, InvalidJobError, messageDeduplicationId, messageGroupId, MessageTooLargeError, parseJobLines, sendEnvelopes, syncProfileJob,
} from '../../shared/index.ts';
import { parseEnvelope } from '../../shared/envelope/index.ts';
import { SQSClient } from '@aws-sdk/client-sqs';

describe('producer SDK: job builders', () => {
  it('builds valid envelopes with ids, trace id, producer version and the intent key', () => {
    const envelope = creditJob({ accountId: 'acc-1', amount: 500, idempotencyKey: 'deposit-9', producerVersion: 'billing@1.4.2' });
    assert.deepEqual(parseEnvelope(JSON.stringify(envelope)), envelope);
    assert.equal(envelope.type, 'account.credit');
    assert.equal(envelope.resourceId, 'acc-1');
    assert.equal(envelope.idempotencyKey, 'deposit-9');
    assert.equal(envelope.producerVersion, 'billing@1.4.2');
    assert.ok(envelope.jobId && envelope.traceId && envelope.jobId !== envelope.traceId);
    assert.deepEqual(debitJob({ accountId: 'acc-1', amount: 1, expectedVersion: 3, idempotencyKey: 'k' }).payload, { amount: 1, expectedVersion: 3 });
    assert.equal(syncProfileJob({ accountId: 'acc-2' }).type, 'account.sync-profile');
  });

  it('refuses an unknown type, a missing key and an invalid payload, naming the field', () => {
    assert.throws(() => buildJob({ type: 'account.refund', resourceId: 'a', payload: {} }), (e: unknown) => e instanceof InvalidJobError && /unknown job type 'account.refund'.*account.credit/.test(e.message));
    assert.throws(() => buildJob({ type: 'account.credit', resourceId: 'a', payload: { amount: 1 } }), /idempotencyKey is required/);
    assert.throws(() => creditJob({ accountId: 'a', amount: -5, idempotencyKey: 'k' }), /payload\.amount/);
  });

  it('FIFO ids: group by resource, deduplicate by intent; unsafe ids are hashed', () => {
    const envelope = creditJob({ accountId: 'acc-1', amount: 1, idempotencyKey: 'order 77 ü' });
    assert.equal(messageGroupId(envelope), 'acc-1');
    assert.match(messageDeduplicationId(envelope), /^[0-9a-f]{64}$/);
  });
});

describe('producer SDK: JSON lines', () => {
  it('names the line of a malformed JSON line, an unknown type and a missing field, and keeps the good lines', () => {
    const text = [
      '{"type":"account.credit","resourceId":"acc-1","idempotencyKey":"k1","payload":{"amount":5}}',
      '{"type":"account.credit", "resourceId": ',
      '',
      '{"type":"account.refund","resourceId":"acc-1","idempotencyKey":"k3","payload":{"amount":5}}',
      '{"type":"account.debit","resourceId":"acc-1","idempotencyKey":"k4","payload":{}}',
      '{"type":"account.sync-profile","payload":{}}',
    ].join('\n');
    const { jobs, errors } = parseJobLines(text, { producerVersion: 'test' });
    assert.deepEqual(jobs.map((j) => j.line), [1]);
    assert.equal(jobs[0]?.envelope.producerVersion, 'test');
    assert.deepEqual(errors.map((e) => e.line), [2, 4, 5, 6]);
    assert.match(errors[0]?.message ?? '', /^line 2: not valid JSON/);
    assert.match(errors[1]?.message ?? '', /^line 4: unknown job type 'account.refund'/);
    assert.match(errors[2]?.message ?? '', /^line 5: account.debit: payload.amount: /);
    assert.match(errors[3]?.message ?? '', /^line 6: resourceId is required/);
  });

  it('refuses a line over the size limit with sizes in the message', () => {
    const big = JSON.stringify({ type: 'account.sync-profile', resourceId: 'acc-1', payload: { reason: 'x'.repeat(150) } });
    const { errors } = parseJobLines(big, { maxMessageBytes: 200 });
    assert.ok(errors[0] instanceof MessageTooLargeError);
    assert.match(errors[0].message, /^line 1: job .* is \d+ bytes, over the 200-byte SQS message limit/);
  });

  it('sendEnvelopes checks every size before sending anything', async () => {
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const small = creditJob({ accountId: 'acc-1', amount: 1, idempotencyKey: 'k' });
    const large = syncProfileJob({ accountId: 'acc-1', reason: 'y'.repeat(190) });
    await assert.rejects(sendEnvelopes(sqs, 'http://127.0.0.1:9/q', [small, large], { maxMessageBytes: 400 }), MessageTooLargeError);
    sqs.destroy();
  });
});
