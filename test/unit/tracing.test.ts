import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { withTraceparent } from '../../shared/idempotency/business-writes.ts';
import { contextOfTraceparent, spanContextOfTraceparent, TRACE_ATTRIBUTE } from '../../shared/tracing/index.ts';
import { decodeEntry, defineEntity, encodeValue, projectItem } from '../../shared/cache/index.ts';
import { strictObject, number, string } from 'zod/mini';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing: the committed item carries the trace of the job that wrote it', () => {
  it('adds the attribute to an Update\'s SET clause, or a SET clause when there is none', () => {
    const update = (UpdateExpression: string) => withTraceparent({ Update: { TableName: 't', Key: { pk: 'a' }, UpdateExpression, ExpressionAttributeNames: { '#b': 'balance' }, ExpressionAttributeValues: { ':v': 1 } } }, TRACEPARENT).Update;
    assert.equal(update('ADD #b :v SET version = version + :v')?.UpdateExpression, 'ADD #b :v SET #ballastTrace = :ballastTrace, version = version + :v');
    assert.equal(update('set #b = :v')?.UpdateExpression, 'SET #ballastTrace = :ballastTrace, #b = :v');
    assert.equal(update('ADD #b :v')?.UpdateExpression, 'ADD #b :v SET #ballastTrace = :ballastTrace');
    const traced = update('SET #b = :v');
    assert.deepEqual(traced?.ExpressionAttributeNames, { '#b': 'balance', '#ballastTrace': TRACE_ATTRIBUTE });
    assert.deepEqual(traced?.ExpressionAttributeValues, { ':v': 1, ':ballastTrace': TRACEPARENT });
  });

  it('adds it to a Put\'s item and leaves Delete and ConditionCheck alone', () => {
    assert.equal(withTraceparent({ Put: { TableName: 't', Item: { pk: 'a' } } }, TRACEPARENT).Put?.Item?.[TRACE_ATTRIBUTE], TRACEPARENT);
    const remove = { Delete: { TableName: 't', Key: { pk: 'a' } } };
    assert.equal(withTraceparent(remove, TRACEPARENT), remove);
  });

  it('parses a stored traceparent into a remote span context; anything else names none', () => {
    assert.deepEqual(spanContextOfTraceparent(TRACEPARENT), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true });
    for (const bad of [undefined, 42, '', '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`]) {
      assert.equal(spanContextOfTraceparent(bad), undefined, String(bad));
    }
    assert.equal(trace.getSpanContext(contextOfTraceparent(TRACEPARENT))?.spanId, 'b7ad6b7169203331');
  });

  it('the cache keeps the write\'s trace beside the value; a strict entity schema never sees it', () => {
    const widget = defineEntity({ name: 'widget', schemaVersion: 1, schema: strictObject({ id: string(), version: number() }) });
    assert.deepEqual(projectItem(widget, { id: 'w', version: 2, [TRACE_ATTRIBUTE]: TRACEPARENT }), { id: 'w', version: 2 });
    const payload = encodeValue({ id: 'w', version: 2 } as { id: string; version: number }, TRACEPARENT);
    assert.deepEqual(decodeEntry(widget, payload, '2'), { value: { id: 'w', version: 2 }, writeTrace: TRACEPARENT });
    assert.deepEqual(decodeEntry(widget, encodeValue({ id: 'w', version: 2 } as { id: string; version: number }), '2'), { value: { id: 'w', version: 2 } });
  });
});
