import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  buildJob, defineJobTypes, InvalidJobError, jobBuilder, messageDeduplicationId, messageGroupId, MessageTooLargeError, parseJobLines, sendEnvelopes,
} from '../../shared/producer/index.ts';
import { jobResources } from '../../shared/workloads/index.ts';
import { JOB_CATALOG, job } from '../fixtures/workloads/registry.ts';
import { parseEnvelope } from '../../shared/envelope/index.ts';
import { SQSClient } from '@aws-sdk/client-sqs';

describe('producer SDK: job builders', () => {
  it('builds valid envelopes with ids, trace id, producer version and the intent key', () => {
    const envelope = job('account.credit', { resourceId: 'acc-1', idempotencyKey: 'deposit-9', producerVersion: 'billing@1.4.2', payload: { amount: 500 } });
    assert.deepEqual(parseEnvelope(JSON.stringify(envelope)), envelope);
    assert.equal(envelope.type, 'account.credit');
    assert.equal(envelope.resourceId, 'acc-1');
    assert.equal(envelope.idempotencyKey, 'deposit-9');
    assert.equal(envelope.producerVersion, 'billing@1.4.2');
    assert.ok(envelope.jobId && envelope.traceId && envelope.jobId !== envelope.traceId);
    assert.deepEqual(job('account.debit', { resourceId: 'acc-1', idempotencyKey: 'k', payload: { amount: 1, expectedVersion: 3 } }).payload, { amount: 1, expectedVersion: 3 });
    assert.equal(job('account.sync-profile', { resourceId: 'acc-2', payload: {} }).type, 'account.sync-profile');
  });

  it('refuses an unknown type, a missing key and an invalid payload, naming the field', () => {
    assert.throws(() => buildJob(JOB_CATALOG, { type: 'account.refund', resourceId: 'a', payload: {} }), (e: unknown) => e instanceof InvalidJobError && /unknown job type 'account.refund'.*account.credit/.test(e.message));
    assert.throws(() => buildJob(JOB_CATALOG, { type: 'toString', resourceId: 'a', payload: {} }), /unknown job type 'toString'/, 'only own keys are types');
    assert.throws(() => buildJob(JOB_CATALOG, { type: 'account.credit', resourceId: 'a', payload: { amount: 1 } }), /idempotencyKey is required/);
    assert.throws(() => buildJob(JOB_CATALOG, { type: 'account.credit', resourceId: '', idempotencyKey: 'k', payload: { amount: 1 } }), /resourceId is required \(the account id\)/);
    assert.throws(() => job('account.credit', { resourceId: 'a', idempotencyKey: 'k', payload: { amount: -5 } }), /payload\.amount/);
  });

  it('derives a typed builder from any catalog: no hand-written builder per type', () => {
    const catalog = defineJobTypes({
      'order.place': { payload: z.object({ total: z.number().int().positive() }), requiresIdempotencyKey: true, resourceIdIs: 'the order id' },
      'order.merge': { payload: z.object({ into: z.string() }), resources: ({ payload }) => [payload.into] },
    });
    const build = jobBuilder(catalog, { producerVersion: 'shop@2' });
    const placed = build('order.place', { resourceId: 'o-1', idempotencyKey: 'checkout-1', payload: { total: 5 } });
    assert.deepEqual([placed.type, placed.producerVersion, placed.payload], ['order.place', 'shop@2', { total: 5 }]);
    assert.throws(() => build('order.place', { resourceId: 'o-1', payload: { total: 5 } }), /order.place: idempotencyKey is required/);
    // @ts-expect-error the payload is typed by the type's schema
    assert.throws(() => build('order.place', { resourceId: 'o-1', idempotencyKey: 'k', payload: { total: 'five' } }), /payload\.total/);
    assert.throws(() => defineJobTypes({ Order: { payload: z.object({}) } }), /job type 'Order' must be '<entity>.<verb>'/);
    assert.deepEqual(jobResources(catalog, build('order.merge', { resourceId: 'o-2', payload: { into: 'o-1' } })), ['o-2', 'o-1']);
    assert.deepEqual(jobResources(catalog, { type: 'order.merge', resourceId: 'o-2', payload: { into: 7 } }), ['o-2'], 'a refused payload locks its own resource only');
    assert.deepEqual(jobResources(catalog, { type: 'order.gone', resourceId: 'o-2', payload: {} }), ['o-2']);
  });

  it('FIFO ids: group by resource, deduplicate by intent; unsafe ids are hashed', () => {
    const envelope = job('account.credit', { resourceId: 'acc-1', idempotencyKey: 'order 77 ü', payload: { amount: 1 } });
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
    const { jobs, errors } = parseJobLines(text, { catalog: JOB_CATALOG, producerVersion: 'test' });
    assert.deepEqual(jobs.map((j) => j.line), [1]);
    assert.equal(jobs[0]?.envelope.producerVersion, 'test');
    assert.deepEqual(errors.map((e) => e.line), [2, 4, 5, 6]);
    assert.match(errors[0]?.message ?? '', /^line 2: not valid JSON/);
    assert.match(errors[1]?.message ?? '', /^line 4: unknown job type 'account.refund'/);
    assert.match(errors[2]?.message ?? '', /^line 5: account.debit: payload.amount: /);
    assert.match(errors[3]?.message ?? '', /^line 6: resourceId is required/);
  });

  it('validates a line of any registered workload\'s type against its schema', () => {
    const text = [
      '{"type":"stock.receive","resourceId":"sku-1","idempotencyKey":"d1","payload":{"quantity":5}}',
      '{"type":"stock.reserve","resourceId":"sku-1","idempotencyKey":"r1","payload":{"quantity":2}}',
      '{"type":"shipment.book","resourceId":"ship-1","payload":{"reservationIds":["r1"]}}',
    ].join('\n');
    const { jobs, errors } = parseJobLines(text, { catalog: JOB_CATALOG });
    assert.deepEqual(jobs.map((j) => j.envelope.type), ['stock.receive']);
    assert.match(errors[0]?.message ?? '', /^line 2: stock.reserve: payload.reservationId: /);
    assert.match(errors[1]?.message ?? '', /^line 3: shipment.book: idempotencyKey is required/);
  });

  it('refuses a line over the size limit with sizes in the message', () => {
    const big = JSON.stringify({ type: 'account.sync-profile', resourceId: 'acc-1', payload: { reason: 'x'.repeat(150) } });
    const { errors } = parseJobLines(big, { catalog: JOB_CATALOG, maxMessageBytes: 200 });
    assert.ok(errors[0] instanceof MessageTooLargeError);
    assert.match(errors[0].message, /^line 1: job .* is \d+ bytes, over the 200-byte SQS message limit/);
  });

  it('sendEnvelopes checks every size before sending anything', async () => {
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const small = job('account.credit', { resourceId: 'acc-1', idempotencyKey: 'k', payload: { amount: 1 } });
    const large = job('account.sync-profile', { resourceId: 'acc-1', payload: { reason: 'y'.repeat(190) } });
    await assert.rejects(sendEnvelopes(sqs, 'http://127.0.0.1:9/q', [small, large], { maxMessageBytes: 400 }), MessageTooLargeError);
    sqs.destroy();
  });
});
