import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { startSqsEventSource, type InvocationSummary, type SqsEventSourceOptions } from '../../local/lambda/sqs-event-source.ts';
import { FunctionRuntime, INIT_PHASE_LIMIT_MS } from '../../local/lambda/function-runtime.ts';
import { useEngines } from '../helpers/engines.ts';
import { waitFor } from '../helpers/wait.ts';

// The event source mapping emulation against the real fauxqs engine: what reappears on the queue,
// and when, is fauxqs's doing, not a fake's.
describe('SQS event source mapping emulation', () => {
  const local = useEngines();

  /** A fresh queue with a 1 s visibility timeout, so anything left undeleted is back within a second. */
  async function createQueue(name: string, attributes: Record<string, string> = {}) {
    const { QueueUrl } = await local.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '1', ...attributes } }));
    assert.ok(QueueUrl, 'queue created');
    const { Attributes } = await local.sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    assert.ok(Attributes?.QueueArn, 'queue has an ARN');
    return { queueUrl: QueueUrl, queueArn: Attributes.QueueArn };
  }

  async function send(queueUrl: string, bodies: readonly string[], extra: (index: number) => object = () => ({})) {
    for (let start = 0; start < bodies.length; start += 10) {
      const entries = bodies.slice(start, start + 10).map((body, offset) => ({ Id: `e${start + offset}`, MessageBody: body, ...extra(start + offset) }));
      const { Failed = [] } = await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      assert.deepEqual(Failed, [], 'every message sent');
    }
  }

  /** Messages visible plus in flight plus delayed: zero once everything was deleted. */
  async function messagesLeft(queueUrl: string): Promise<number> {
    const { Attributes = {} } = await local.sqs.send(new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }));
    return Object.values(Attributes).reduce((sum, count) => sum + Number(count), 0);
  }

  /**
   * Starts an event source whose handler records every delivery (body → records seen, in order)
   * before running `behaviour`; it is stopped after the test, pass or fail.
   */
  function startRecording(
    t: TestContext,
    queue: { queueUrl: string; queueArn: string },
    behaviour: (event: SQSEvent, context: Context) => Promise<unknown>,
    options: Partial<SqsEventSourceOptions> = {},
  ) {
    const deliveries = new Map<string, SQSRecord[]>();
    const deliveredAtMs = new Map<string, number[]>();
    const summaries: InvocationSummary[] = [];
    const source = startSqsEventSource({
      sqs: local.sqs,
      ...queue,
      functionName: 'ballast-test-worker',
      functionTimeoutMs: 5_000,
      maximumConcurrency: 1,
      onInvocation: (summary) => summaries.push(summary),
      ...options,
      handler: async (event, context) => {
        for (const record of event.Records) {
          deliveries.set(record.body, [...(deliveries.get(record.body) ?? []), record]);
          deliveredAtMs.set(record.body, [...(deliveredAtMs.get(record.body) ?? []), Date.now()]);
        }
        return behaviour(event, context);
      },
    });
    t.after(() => source.stop({ graceMs: 0 }));
    const deliveryCount = (body: string) => deliveries.get(body)?.length ?? 0;
    return { source, deliveries, deliveredAtMs, summaries, deliveryCount };
  }

  it('rejects a configuration AWS would reject, naming the field', async () => {
    // GIVEN a queue
    const queue = await createQueue('invalid-config');
    const base = { sqs: local.sqs, ...queue, functionName: 'worker', functionTimeoutMs: 1_000, handler: async () => ({}) };
    // WHEN batch size, window or FIFO settings are out of AWS's ranges, THEN starting throws
    assert.throws(() => startSqsEventSource({ ...base, batchSize: 11 }), /batchSize 11 needs maximumBatchingWindowMs/);
    assert.throws(() => startSqsEventSource({ ...base, batchSize: 0 }), /batchSize must be an integer from 1 to 10000; got 0/);
    assert.throws(() => startSqsEventSource({ ...base, maximumConcurrency: 0 }), /maximumConcurrency/);
    assert.throws(() => startSqsEventSource({ ...base, queueUrl: `${queue.queueUrl}.fifo`, maximumBatchingWindowMs: 1_000 }), /FIFO queues support no batching window/);
  });

  it('builds Lambda-shaped records from what fauxqs returns', async (t) => {
    // GIVEN a message with string, number and binary attributes
    const queue = await createQueue('shape');
    await send(queue.queueUrl, ['hello'], () => ({
      MessageAttributes: {
        tenant: { DataType: 'String', StringValue: 'acme' },
        attempt: { DataType: 'Number', StringValue: '3' },
        blob: { DataType: 'Binary', BinaryValue: Buffer.from('bytes') },
      },
    }));
    // WHEN the event source delivers it
    const run = startRecording(t, queue, async () => ({ batchItemFailures: [] }));
    await waitFor('the delivery', () => run.deliveryCount('hello') === 1);
    // THEN the record has the fields and shapes an AWS SQS event has
    const record = run.deliveries.get('hello')?.[0];
    assert.ok(record);
    assert.equal(record.eventSource, 'aws:sqs');
    assert.equal(record.eventSourceARN, queue.queueArn);
    assert.equal(record.awsRegion, 'us-east-1');
    assert.match(record.md5OfBody, /^[0-9a-f]{32}$/);
    assert.match(record.md5OfMessageAttributes ?? '', /^[0-9a-f]{32}$/);
    assert.equal(record.attributes.ApproximateReceiveCount, '1');
    assert.equal(record.attributes.SenderId, '000000000000');
    assert.match(record.attributes.SentTimestamp, /^\d{13}$/);
    assert.match(record.attributes.ApproximateFirstReceiveTimestamp, /^\d{13}$/);
    assert.deepEqual(record.messageAttributes, {
      tenant: { stringValue: 'acme', stringListValues: [], binaryListValues: [], dataType: 'String' },
      attempt: { stringValue: '3', stringListValues: [], binaryListValues: [], dataType: 'Number' },
      blob: { binaryValue: Buffer.from('bytes').toString('base64'), stringListValues: [], binaryListValues: [], dataType: 'Binary' },
    });
  });

  it('deletes only the records not reported in batchItemFailures; the reported ones come back', async (t) => {
    // GIVEN four messages, two of which the handler reports as failed on their first delivery
    const queue = await createQueue('partial');
    await send(queue.queueUrl, ['ok-1', 'fail-2', 'ok-3', 'fail-4']);
    // WHEN the event source delivers them
    const run = startRecording(t, queue, async (event) => ({
      batchItemFailures: event.Records
        .filter((record) => record.body.startsWith('fail') && record.attributes.ApproximateReceiveCount === '1')
        .map((record) => ({ itemIdentifier: record.messageId })),
    }));
    await waitFor('the queue to be empty', async () => run.deliveryCount('fail-4') === 2 && (await messagesLeft(queue.queueUrl)) === 0);
    // THEN the unreported records were delivered once; the reported ones again, after the visibility timeout
    assert.equal(run.deliveryCount('ok-1'), 1);
    assert.equal(run.deliveryCount('ok-3'), 1);
    for (const body of ['fail-2', 'fail-4']) {
      assert.equal(run.deliveries.get(body)?.[1]?.attributes.ApproximateReceiveCount, '2', `${body} came back`);
      const [firstAtMs = 0, secondAtMs = 0] = run.deliveredAtMs.get(body) ?? [];
      assert.ok(secondAtMs - firstAtMs >= 900, `${body} came back after ${secondAtMs - firstAtMs} ms, not before the 1 s visibility timeout`);
    }
    assert.equal(run.summaries[0]?.failedMessageIds.length, 2);
    assert.equal(run.source.stats().messagesDeleted, 4);
  });

  it('fails the whole batch when batchItemFailures names a record that is not in it', async (t) => {
    // GIVEN two messages and a handler that, the first time, reports an unknown itemIdentifier
    const queue = await createQueue('unknown-item');
    await send(queue.queueUrl, ['a', 'b']);
    const run = startRecording(t, queue, async (event) => (event.Records[0]?.attributes.ApproximateReceiveCount === '1'
      ? { batchItemFailures: [{ itemIdentifier: 'no-such-message' }] }
      : {}));
    // WHEN it has run to an empty queue
    await waitFor('the queue to be empty', async () => run.deliveryCount('b') === 2 && (await messagesLeft(queue.queueUrl)) === 0);
    // THEN both records came back, as AWS treats an unusable report as a complete failure
    assert.equal(run.deliveryCount('a'), 2);
    assert.deepEqual(run.summaries.map((summary) => summary.failedMessageIds.length), [2, 0]);
  });

  it('returns the whole batch to the queue when the handler throws', async (t) => {
    // GIVEN three messages and a handler that throws on their first delivery
    const queue = await createQueue('throws');
    await send(queue.queueUrl, ['x', 'y', 'z']);
    const run = startRecording(t, queue, async (event) => {
      if (event.Records[0]?.attributes.ApproximateReceiveCount === '1') throw new Error('boom');
      return undefined;
    });
    // WHEN it has run to an empty queue
    await waitFor('the queue to be empty', async () => run.deliveryCount('z') === 2 && (await messagesLeft(queue.queueUrl)) === 0);
    // THEN nothing was deleted after the error: every record was delivered again
    assert.deepEqual(['x', 'y', 'z'].map(run.deliveryCount), [2, 2, 2]);
    assert.equal(run.summaries[0]?.outcome, 'error');
    assert.equal(run.summaries[0]?.failedMessageIds.length, 3);
    assert.equal(run.source.stats().errors, 1);
  });

  it('returns the whole batch to the queue when the handler outlives the function timeout', async (t) => {
    // GIVEN a 300 ms function timeout and a handler that, the first time, succeeds only after 600 ms
    const queue = await createQueue('timeout');
    await send(queue.queueUrl, ['slow-1', 'slow-2']);
    const run = startRecording(t, queue, async (event) => {
      if (event.Records[0]?.attributes.ApproximateReceiveCount === '1') await sleep(600);
      return {};
    }, { functionTimeoutMs: 300 });
    // WHEN it has run to an empty queue
    await waitFor('the queue to be empty', async () => run.deliveryCount('slow-2') === 2 && (await messagesLeft(queue.queueUrl)) === 0);
    // THEN the late success deleted nothing: both records were delivered again
    assert.deepEqual([run.deliveryCount('slow-1'), run.deliveryCount('slow-2')], [2, 2]);
    // (The redelivery may come back as one batch or as two, as SQS's receives do.)
    const [first, ...rest] = run.summaries.map((summary) => summary.outcome);
    assert.equal(first, 'timeout');
    assert.ok(rest.length >= 1 && rest.every((outcome) => outcome === 'ok'), rest.join(', '));
    assert.equal(run.source.stats().timeouts, 1);
  });

  /**
   * One message to a new queue, mapped to the fixture function in a real sandbox (`environment`
   * shapes it: FIXTURE_INIT_MS, FIXTURE_SLEEP_MS), as the local cloud maps it; resolves with the
   * first invocation's summary. Both are stopped after the test.
   */
  async function firstSandboxedInvocation(t: TestContext, name: string, timeoutMs: number, environment: Record<string, string>) {
    const queue = await createQueue(name);
    const fn = new FunctionRuntime({
      functionName: name, file: fileURLToPath(new URL('../fixtures/lambda/index.mjs', import.meta.url)), exportName: 'handler', timeoutMs, environment,
    });
    t.after(() => fn.stop());
    await send(queue.queueUrl, [name]);
    const summaries: InvocationSummary[] = [];
    const source = startSqsEventSource({
      sqs: local.sqs, ...queue, functionName: name, functionTimeoutMs: timeoutMs, initPhaseLimitMs: INIT_PHASE_LIMIT_MS,
      maximumConcurrency: 1, handler: fn.handler, onInvocation: (summary) => summaries.push(summary),
    });
    t.after(() => source.stop({ graceMs: 0 }));
    await waitFor('the first invocation', () => summaries.length > 0);
    return { queue, source, first: summaries[0] as InvocationSummary };
  }

  it('waits out a cold start\'s Init phase before the function timeout starts, as Lambda\'s poller does', async (t) => {
    // GIVEN a sandboxed function whose Init takes 800 ms and whose timeout is 500 ms, invoked cold
    const { queue, first } = await firstSandboxedInvocation(t, 'slow-init', 500, { FIXTURE_INIT_MS: '800' });
    // THEN the first delivery succeeds and deletes its record: no timeout, no redelivery
    assert.equal(first.outcome, 'ok', String(first.error ?? ''));
    await waitFor('the queue to be empty', async () => (await messagesLeft(queue.queueUrl)) === 0);
  });

  it('reports a sandbox killed at the function timeout as a timeout, as Lambda does, whichever clock saw it first', async (t) => {
    // GIVEN a sandboxed function that outlives its 300 ms timeout (the runtime kills it before the mapping's Init-padded wait ends)
    const { source, first } = await firstSandboxedInvocation(t, 'sandbox-timeout', 300, { FIXTURE_SLEEP_MS: '2000' });
    // THEN the invocation is counted as the timeout it was, not as a handler error
    assert.equal(first.outcome, 'timeout');
    assert.equal(source.stats().timeouts, 1);
  });

  it('never has more than maximumConcurrency invocations in flight', async (t) => {
    // GIVEN 40 messages, batches of 2 and at most 3 concurrent invocations of a slow handler
    const queue = await createQueue('concurrency');
    const bodies = Array.from({ length: 40 }, (_, index) => `job-${index}`);
    await send(queue.queueUrl, bodies);
    let running = 0;
    let mostRunning = 0;
    const run = startRecording(t, queue, async (event) => {
      assert.ok(event.Records.length <= 2, 'batch size respected');
      running += 1;
      mostRunning = Math.max(mostRunning, running);
      await sleep(40);
      running -= 1;
      return {};
    }, { batchSize: 2, maximumConcurrency: 3 });
    // WHEN every message has been processed
    await waitFor('all 40 to be deleted', () => run.source.stats().messagesDeleted === 40, 15_000);
    // THEN the cap held, was reached, and each message was processed exactly once
    assert.equal(mostRunning, 3);
    assert.equal(run.source.stats().maxObservedConcurrency, 3);
    assert.deepEqual(bodies.filter((body) => run.deliveryCount(body) !== 1), []);
    assert.equal(await messagesLeft(queue.queueUrl), 0);
  });

  it('counts getRemainingTimeInMillis() down from the function timeout during an invocation', async (t) => {
    // GIVEN a 2 s function timeout and a handler that reads the remaining time twice, 200 ms apart
    const queue = await createQueue('countdown');
    await send(queue.queueUrl, ['tick']);
    const readings: number[] = [];
    const run = startRecording(t, queue, async (_event, context) => {
      readings.push(context.getRemainingTimeInMillis());
      await sleep(200);
      readings.push(context.getRemainingTimeInMillis());
      return {};
    }, { functionTimeoutMs: 2_000 });
    // WHEN it runs
    await waitFor('the invocation to finish', () => run.summaries.length === 1);
    // THEN the remaining time started near the timeout and went down by about the time spent
    const [atStart = 0, later = 0] = readings;
    assert.ok(atStart <= 2_000 && atStart > 1_800, `at start: ${atStart}`);
    assert.ok(atStart - later >= 180 && atStart - later < 1_000, `after 200 ms: ${later}`);
  });

  it('stop() lets an in-flight invocation finish and delete its batch', async (t) => {
    // GIVEN an invocation that is 400 ms from finishing
    const queue = await createQueue('graceful');
    await send(queue.queueUrl, ['in-flight']);
    const run = startRecording(t, queue, async () => sleep(400).then(() => ({})));
    await waitFor('the invocation to start', () => run.deliveryCount('in-flight') === 1);
    // WHEN the event source is stopped with enough grace
    await run.source.stop({ graceMs: 5_000 });
    // THEN stop() waited for it, and its message was deleted
    assert.equal(run.summaries[0]?.outcome, 'ok');
    assert.deepEqual(run.source.stats(), {
      invocations: 1, ok: 1, errors: 0, timeouts: 0, abandoned: 0, messagesDeleted: 1, inFlight: 0, maxObservedConcurrency: 1,
    });
    assert.equal(await messagesLeft(queue.queueUrl), 0);
  });

  it('stop() abandons an invocation that outlives the grace period, deleting nothing for it', async (t) => {
    // GIVEN an invocation that needs 1.5 s more
    const queue = await createQueue('abandoned');
    await send(queue.queueUrl, ['too-slow']);
    const run = startRecording(t, queue, async () => sleep(1_500).then(() => ({})));
    await waitFor('the invocation to start', () => run.deliveryCount('too-slow') === 1);
    // WHEN the event source is stopped with 100 ms of grace
    const stoppingAtMs = Date.now();
    await run.source.stop({ graceMs: 100 });
    // THEN stop() returned soon, and the message stays on the queue to be delivered again
    assert.ok(Date.now() - stoppingAtMs < 1_000, 'stop() did not wait for the handler');
    assert.equal(run.summaries[0]?.outcome, 'abandoned');
    assert.equal(run.source.stats().messagesDeleted, 0);
    assert.equal(await messagesLeft(queue.queueUrl), 1);
  });

  /**
   * An SQS client whose DeleteMessageBatch calls wait until `open()` (or 3 s, so a poller that
   * waits for them cannot hang the test); `held` counts the deletes waiting right now, and
   * `receivesWhileHeld` the receives sent meanwhile.
   */
  function gatedDeletes(t: TestContext) {
    const sqs = new SQSClient({});
    t.after(() => sqs.destroy());
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; setTimeout(resolve, 3_000).unref(); });
    const state = { held: 0, receivesWhileHeld: 0, open: () => open() };
    sqs.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'ReceiveMessageCommand' && state.held > 0) state.receivesWhileHeld += 1;
      if (context.commandName !== 'DeleteMessageBatchCommand') return next(args);
      state.held += 1;
      await gate;
      state.held -= 1;
      return next(args);
    }, { step: 'initialize', name: 'gateDeletes' });
    return { sqs, state };
  }

  it('on a standard queue, receives the next batch while the last one is being deleted, and invokes it after; on FIFO, receives after', async (t) => {
    for (const fifo of [false, true]) {
      // GIVEN two batches' worth of messages, one poller, and deletes held at a gate
      const queue = await createQueue(fifo ? 'pipelined.fifo' : 'pipelined', fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'true' } : {});
      const bodies = Array.from({ length: 20 }, (_, i) => `${fifo ? 'f' : 's'}-${i}`);
      await send(queue.queueUrl, bodies, () => (fifo ? { MessageGroupId: 'g' } : {}));
      const { sqs, state } = gatedDeletes(t);
      const heldAtInvocation: number[] = [];
      const run = startRecording(t, queue, async () => void heldAtInvocation.push(state.held), { sqs });
      // WHEN the first batch has been handled and its delete waits
      await waitFor('the first delete to wait at the gate', () => state.held === 1, 5_000);
      if (!fifo) await waitFor('a receive beside it', () => state.receivesWhileHeld > 0, 2_000);
      await sleep(200);
      const invocationsWhileHeld = heldAtInvocation.length;
      state.open();
      await waitFor('both batches deleted', () => run.source.stats().messagesDeleted === 20, 10_000);
      await run.source.stop();
      // THEN the next receive went out beside the delete on the standard queue only, and on both
      // the next invocation waited for it: one delete in flight per poller, invocations in order
      assert.equal(state.receivesWhileHeld > 0, !fifo, fifo ? 'FIFO: delete, then receive' : 'standard: receive beside the delete');
      assert.equal(invocationsWhileHeld, 1, 'the next invocation waits for the delete');
      assert.ok(heldAtInvocation.every((held) => held === 0), `no invocation while a delete was held: ${heldAtInvocation}`);
      assert.deepEqual(run.summaries.map((summary) => summary.outcome), heldAtInvocation.map(() => 'ok'));
      assert.equal(await messagesLeft(queue.queueUrl), 0);
    }
  });

  it('keeps each FIFO message group in order', async (t) => {
    // GIVEN three messages in each of two groups of a FIFO queue
    const queue = await createQueue('ordered.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'true' });
    const bodies = ['a-1', 'b-1', 'a-2', 'b-2', 'a-3', 'b-3'];
    await send(queue.queueUrl, bodies, (index) => ({ MessageGroupId: bodies[index]?.slice(0, 1) }));
    const order: string[] = [];
    const run = startRecording(t, queue, async (event) => void order.push(...event.Records.map((record) => record.body)));
    // WHEN all are processed
    await waitFor('all six to be deleted', () => run.source.stats().messagesDeleted === 6);
    // THEN within each group they arrived in send order, with the FIFO attributes
    assert.deepEqual(order.filter((body) => body.startsWith('a')), ['a-1', 'a-2', 'a-3']);
    assert.deepEqual(order.filter((body) => body.startsWith('b')), ['b-1', 'b-2', 'b-3']);
    const record = run.deliveries.get('a-2')?.[0];
    assert.equal(record?.attributes.MessageGroupId, 'a');
    assert.ok(record?.attributes.MessageDeduplicationId && record.attributes.SequenceNumber);
  });
});
