import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { context, propagation, trace, type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import type { SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { object } from 'zod/mini';
import { sendEnvelopes } from '../../shared/producer/index.ts';
import { ATTRIBUTES, SPANS, TRACE_ATTRIBUTE, tracer } from '../../shared/tracing/index.ts';
import type { ExternalJob } from '../../shared/batch/index.ts';
import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { registerProcessTracing } from '../../local/tracing/index.ts';
import { useWorkerHarness } from '../helpers/worker-harness.ts';
import { captureOutput } from '../helpers/output.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('tracing: one trace per job through the worker (OpenTelemetry SDK registered, as the layer does)', () => {
  const h = useWorkerHarness();
  const spans: SpanRecord[] = [];
  before(() => {
    assert.ok(registerProcessTracing({ serviceName: 'tracing-test' }).registered, 'this test process registers the SDK first');
    registerProcessTracing().subscribe((finished) => void spans.push(...finished));
  });
  const ofTrace = (traceId: string, name?: string) => spans.filter((span) => span.traceId === traceId && (name === undefined || span.name === name));
  const only = (list: readonly SpanRecord[], what: string): SpanRecord => {
    assert.equal(list.length, 1, `exactly one ${what}: ${JSON.stringify(list.map((s) => [s.name, s.attributes]))}`);
    return list[0] as SpanRecord;
  };

  it('a redelivery after a crash is a second delivery in the same trace, outcome duplicate; the item carries the commit\'s trace', async () => {
    // GIVEN a credit sent with the producer SDK (its produce span's context travels as `traceparent`)
    const queues = await h.queues({ visibilityTimeoutSeconds: 1 });
    const worker = h.worker(queues);
    const credit = h.envelope({ resourceId: 'acc-traced-crash', payload: { amount: 7 } });
    const sent = await sendEnvelopes(h.local.sqs, queues.url, [credit]);
    assert.equal(sent.sent.length, 1);
    const produce = only(spans.filter((span) => span.name === SPANS.produce && span.attributes[ATTRIBUTES.jobId] === credit.jobId), 'produce span');
    // WHEN the first invocation commits but crashes before its message is deleted, and the message comes back
    await h.deliver(queues, worker, { crashAfterHandler: true });
    await sleep(1_100);
    await h.deliver(queues, worker);
    // THEN both deliveries are record spans of the producer's trace, children of its produce span
    const records = ofTrace(produce.traceId, SPANS.record).sort((a, b) => Number(a.attributes[ATTRIBUTES.attempt]) - Number(b.attributes[ATTRIBUTES.attempt]));
    assert.deepEqual(records.map((r) => [r.attributes[ATTRIBUTES.attempt], r.attributes[ATTRIBUTES.outcome], r.parentSpanId]),
      [[1, 'processed', produce.spanId], [2, 'duplicate', produce.spanId]]);
    for (const record of records) {
      assert.equal(record.attributes[ATTRIBUTES.jobId], credit.jobId);
      assert.equal(record.attributes[ATTRIBUTES.idempotencyKey], credit.idempotencyKey);
      assert.equal(record.attributes[ATTRIBUTES.workerVersion], 'test-1');
      assert.equal(record.links.length, 1, 'each record links to its batch');
    }
    const commits = ofTrace(produce.traceId, SPANS.commit);
    assert.deepEqual(commits.map((c) => c.attributes[ATTRIBUTES.outcome]).sort(), ['committed', 'duplicate']);
    assert.equal(ofTrace(produce.traceId, SPANS.queueWait).length, 2, 'one queue wait per delivery');
    // AND the account item names the span of the commit that wrote it
    const committed = commits.find((c) => c.attributes[ATTRIBUTES.outcome] === 'committed') as SpanRecord;
    const account = await h.account('acc-traced-crash');
    assert.equal((account as Record<string, unknown> | undefined)?.[TRACE_ATTRIBUTE], `00-${committed.traceId}-${committed.spanId}-01`);
    // AND the batches link to the record's trace
    const batches = spans.filter((span) => span.name === SPANS.batch && span.links.some((link) => link.traceId === produce.traceId));
    assert.equal(batches.length, 2);
  });

  it('a producer duplicate sent within one request\'s span shares its trace: one delivery processed, the other duplicate', async () => {
    const queues = await h.queues();
    const worker = h.worker(queues);
    const credit = h.envelope({ resourceId: 'acc-traced-dup', payload: { amount: 3 } });
    // GIVEN an API request's span that sends the same intent twice (a client retry)
    const request = tracer().startSpan('api request');
    await context.with(trace.setSpan(context.active(), request), async () => {
      await sendEnvelopes(h.local.sqs, queues.url, [credit]);
      await sendEnvelopes(h.local.sqs, queues.url, [{ ...credit, jobId: `${credit.jobId}-again` }]);
    });
    request.end();
    // WHEN the worker takes them in two invocations
    await h.deliver(queues, worker, { max: 1 });
    await h.deliver(queues, worker, { max: 1 });
    // THEN the request's trace holds both deliveries: the first processed, the second a duplicate
    const traceId = request.spanContext().traceId;
    assert.equal(ofTrace(traceId, SPANS.produce).length, 2);
    assert.deepEqual(ofTrace(traceId, SPANS.record).map((r) => r.attributes[ATTRIBUTES.outcome]).sort(), ['duplicate', 'processed']);
    assert.equal((await h.account('acc-traced-dup'))?.balance, 3);
  });

  it('a fenced commit shows the older claim\'s refusal: reason fenced, the fence, the cancellation reasons', async () => {
    const queues = await h.queues();
    // GIVEN an external job whose lease is taken over (a newer fence on its lock) while it calls out
    const taken: ExternalJob<Record<string, never>> = {
      type: 'trace.taken-over',
      payload: object({}),
      effects: 'external',
      async perform({ claim }) {
        await h.documents.send(new PutCommand({
          TableName: h.tables.control,
          Item: { pk: `lock#${claim.resourceId}`, ownerToken: 'newer-holder', fence: claim.fence + 1, leaseUntilMs: Date.now() + 30_000, expiresAtEpochSeconds: 0 },
        }));
        return { writes: [] };
      },
    };
    const worker = h.worker(queues, { jobs: [taken] });
    const job = h.envelope({ type: taken.type, resourceId: 'res-fenced', payload: {} });
    await sendEnvelopes(h.local.sqs, queues.url, [job]);
    // WHEN it commits
    const { value: delivery, output } = await captureOutput(() => h.deliver(queues, worker));
    assert.equal(delivery.failed.size, 1, 'the record is retried');
    // THEN its trace shows the claim, then the commit refused by the fence
    const produce = only(spans.filter((span) => span.name === SPANS.produce && span.attributes[ATTRIBUTES.jobId] === job.jobId), 'produce span');
    const claim = only(ofTrace(produce.traceId, SPANS.claim), 'claim');
    const commit = only(ofTrace(produce.traceId, SPANS.commit), 'commit');
    assert.equal(claim.attributes[ATTRIBUTES.outcome], 'claimed');
    assert.equal(commit.status.code, 'ERROR');
    assert.equal(commit.attributes[ATTRIBUTES.outcome], 'refused');
    assert.equal(commit.attributes[ATTRIBUTES.reason], 'fenced');
    assert.equal(commit.attributes[ATTRIBUTES.fence], claim.attributes[ATTRIBUTES.fence]);
    assert.ok((commit.attributes[ATTRIBUTES.cancellationReasons] as string[]).includes('ConditionalCheckFailed'));
    const record = only(ofTrace(produce.traceId, SPANS.record), 'record');
    assert.deepEqual([record.attributes[ATTRIBUTES.outcome], record.attributes[ATTRIBUTES.reason], record.status.code], ['retry', 'fenced', 'ERROR']);
    assert.equal(commit.parentSpanId, record.spanId);
    assert.equal(output.logs.find((log) => log.message === 'job will be retried')?.otelTraceId, produce.traceId, 'its log line names the trace');
    assert.equal(only(ofTrace(produce.traceId, SPANS.visibilityBackoff), 'backoff').parentSpanId, produce.spanId);
  });

  it('with X-Ray\'s propagator registered too (as the layer\'s OTEL_PROPAGATORS does), its header is sent as SQS\'s AWSTraceHeader', async () => {
    // A stand-in for the layer's X-Ray propagator: it writes its header for any valid context.
    const xRay: TextMapPropagator = {
      inject: (ctx, carrier, setter) => {
        const spanContext = trace.getSpanContext(ctx);
        if (spanContext) setter.set(carrier, 'X-Amzn-Trace-Id', `Root=1-${spanContext.traceId.slice(0, 8)}-${spanContext.traceId.slice(8)};Parent=${spanContext.spanId};Sampled=1`);
      },
      extract: (ctx) => ctx,
      fields: () => ['X-Amzn-Trace-Id'],
    };
    propagation.disable();
    propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), xRay] }));
    try {
      const queues = await h.queues();
      const job = h.envelope({ resourceId: 'acc-xray', payload: { amount: 1 } });
      // fauxqs keeps no AWSTraceHeader, so the request itself is read.
      const sentEntries: SendMessageBatchRequestEntry[] = [];
      h.local.sqs.middlewareStack.add((next) => async (args) => {
        sentEntries.push(...((args.input as { Entries?: SendMessageBatchRequestEntry[] }).Entries ?? []));
        return next(args);
      }, { step: 'initialize', name: 'readSentEntries' });
      try {
        await sendEnvelopes(h.local.sqs, queues.url, [job]);
      } finally {
        h.local.sqs.middlewareStack.remove('readSentEntries');
      }
      const produce = only(spans.filter((span) => span.name === SPANS.produce && span.attributes[ATTRIBUTES.jobId] === job.jobId), 'produce span');
      const entry = sentEntries[0];
      assert.equal(entry?.MessageSystemAttributes?.AWSTraceHeader?.StringValue, `Root=1-${produce.traceId.slice(0, 8)}-${produce.traceId.slice(8)};Parent=${produce.spanId};Sampled=1`);
      assert.deepEqual(Object.keys(entry?.MessageAttributes ?? {}), ['traceparent'], 'X-Ray\'s header is not also a message attribute');
    } finally {
      propagation.disable();
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    }
  });
});
