import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { sendEnvelopes } from '../../shared/producer/index.ts';
import { ATTRIBUTES, SPANS } from '../../shared/tracing/index.ts';
import type { SpanRecord, TraceQueryResult } from '../../shared/operations/trace-model.ts';
import { JOB_TYPES, accountKey } from '../../workloads/accounts/index.ts';
import { eventually, useCliFixture } from '../helpers/cli-fixture.ts';

describe('tracing end to end on the local cloud: one trace from the producer to the first read of the new version', () => {
  const fixture = useCliFixture();

  it('`ballast trace <jobId>` prints produce → queue wait → record → claim → partner → commit → stream record → tombstone → first read', async () => {
    // GIVEN the shipped stack (every function traced, as the layer's variables in the local template say)
    const { cloud, outputs } = await fixture.startCloud();
    const accountId = 'acc-followed';
    const state = outputs.StateTableName;
    const version = async () => Number((await fixture.local.documents.send(new GetCommand({ TableName: state, Key: { pk: accountKey(accountId) }, ConsistentRead: true }))).Item?.version ?? 0);
    const send = async (type: string, payload: Record<string, unknown>) => {
      const envelope = createEnvelope({ type, resourceId: accountId, payload, producerVersion: 'trace-test' });
      const result = await sendEnvelopes(fixture.local.sqs, outputs.JobsQueueUrl, [envelope]);
      assert.equal(result.sent.length, 1);
      return envelope;
    };
    await send(JOB_TYPES.credit, { amount: 10 });
    await eventually('the account exists', async () => (await version()) === 1, 60_000);
    // WHEN a profile sync (an external job: claim, partner call, commit) is sent with the producer SDK
    const sync = await send(JOB_TYPES.syncProfile, { reason: 'followed' });
    await eventually('the sync committed', async () => (await version()) === 2, 60_000);
    // AND, once its change is invalidated, the account is read through the read API
    const traceOf = async (): Promise<TraceQueryResult> => JSON.parse((await fixture.cli(['trace', sync.jobId, '--json'])).stdout) as TraceQueryResult;
    await eventually('the invalidation is in the job\'s trace', async () => (await traceOf()).traces[0]?.spans.some((s) => s.name === SPANS.tombstone) ?? false, 60_000);
    const read = await fetch(`${outputs.ReadApiUrl}accounts/${accountId}`);
    assert.equal(read.status, 200);
    assert.equal(((await read.json()) as { version: number }).version, 2);
    const writeTrace = read.headers.get('x-write-traceparent');
    await eventually('the read names the write', async () => ((await traceOf()).traces[0]?.readCount ?? 0) > 0, 30_000);

    // THEN the job's one trace holds every hop, each under the one before it
    const result = await traceOf();
    assert.ok(result.matchedBy.includes('jobId'));
    assert.equal(result.traces.length, 1);
    const [job] = result.traces as [TraceQueryResult['traces'][number]];
    const named = (name: string): SpanRecord => {
      const found = job.spans.filter((span) => span.name === name);
      assert.equal(found.length, 1, `one ${name} in ${job.spans.map((s) => s.name).join(', ')}`);
      return found[0] as SpanRecord;
    };
    const produce = named(SPANS.produce);
    const record = named(SPANS.record);
    const claim = named(SPANS.claim);
    const external = named(SPANS.external);
    const commit = named(SPANS.commit);
    const stream = named(SPANS.streamRecord);
    const tombstone = named(SPANS.tombstone);
    assert.equal(named(SPANS.queueWait).parentSpanId, produce.spanId);
    assert.equal(record.parentSpanId, produce.spanId);
    assert.deepEqual([record.attributes[ATTRIBUTES.jobType], record.attributes[ATTRIBUTES.outcome], record.functionName !== undefined],
      [JOB_TYPES.syncProfile, 'processed', true]);
    for (const child of [claim, external, commit]) assert.equal(child.parentSpanId, record.spanId, child.name);
    assert.equal(stream.parentSpanId, commit.spanId, 'the invalidator continues from the commit that wrote the item');
    assert.equal(tombstone.parentSpanId, stream.spanId);
    assert.ok(Number(stream.attributes[ATTRIBUTES.invalidationLagMs]) >= 0);
    assert.ok(stream.functionName !== record.functionName, 'the stream record was handled by another function');
    // AND the read is another trace (the HTTP caller's) that names this one as the write it served
    assert.equal(writeTrace, `00-${commit.traceId}-${commit.spanId}-01`);
    const firstRead = job.reads[0] as SpanRecord;
    assert.equal(firstRead.attributes[ATTRIBUTES.writeTraceId], job.traceId);
    assert.equal(firstRead.attributes[ATTRIBUTES.version], 2);
    assert.ok(firstRead.links.some((link) => link.spanId === commit.spanId));

    // AND the CLI prints the path as a tree
    const printed = await fixture.cli(['trace', sync.jobId]);
    assert.equal(printed.code, 0, printed.stderr);
    const order = [SPANS.produce, SPANS.queueWait, SPANS.record, SPANS.claim, SPANS.external, SPANS.commit, SPANS.streamRecord, SPANS.tombstone]
      .map((name) => printed.stdout.indexOf(name.replace('ballast.', '').replace('_', ' ')));
    assert.ok(order.every((at) => at >= 0), `every hop printed:\n${printed.stdout}`);
    assert.match(printed.stdout, /first read/);
    void cloud;
  });
});
