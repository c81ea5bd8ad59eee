import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough, Readable } from 'node:stream';
import { build } from 'esbuild';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { FunctionRuntime } from '../../local/lambda/function-runtime.ts';
import { SpanStore } from '../../local/tracing/store.ts';
import { serveTraces } from '../../local/tracing/endpoint.ts';
import { registerProcessTracing } from '../../local/tracing/process.ts';
import type { LocalEndpoint } from '../../local/http.ts';
import { writeLocalCloudFile } from '../../shared/discovery/index.ts';
import { STACK_OUTPUTS } from '../../shared/operations/discovery.ts';
import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { TRACES_URL_VARIABLE } from '../../shared/operations/traces.ts';
import { runCli } from '../../cli/program.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/traced-lambda/handler.ts', import.meta.url));
/** What the OpenTelemetry layer puts in a function's environment (the ratio 0: only a sampled parent's traces are kept). */
const LAYER_ENVIRONMENT = {
  AWS_LAMBDA_EXEC_WRAPPER: '/opt/otel-handler', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0',
  OTEL_SERVICE_NAME: 'fixture-worker', OTEL_PROPAGATORS: 'tracecontext,xray',
};

/** An SQS-shaped event of one record carrying `traceparent`, as the producer SDK sends it. */
const sqsEvent = (jobId: string, traceparent: string | undefined, fail = false) => ({
  Records: [{
    messageId: `m-${jobId}`, body: JSON.stringify({ jobId, fail }),
    messageAttributes: traceparent ? { traceparent: { stringValue: traceparent, dataType: 'String' } } : {},
  }],
});

/** Sends a "job" from this process as the producer SDK would: a PRODUCER span whose context travels as `traceparent`. */
function produce(jobId: string, idempotencyKey: string): { traceparent: string; traceId: string; spanId: string } {
  const span = trace.getTracer('test-producer').startSpan('ballast.produce', {
    kind: SpanKind.PRODUCER, attributes: { 'ballast.job.id': jobId, 'ballast.job.type': 'fixture.job', 'ballast.idempotency_key': idempotencyKey },
  });
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  span.end();
  return { traceparent: carrier.traceparent ?? '', ...span.spanContext() };
}

describe('OpenTelemetry in the local sandboxes, collected and printed by ballast trace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ballast-tracing-'));
  const bundle = join(dir, 'index.mjs');
  const store = new SpanStore();
  const fromFunctions: { spans: readonly SpanRecord[]; functionName: string }[] = [];
  const runtimes: FunctionRuntime[] = [];
  let endpoint: LocalEndpoint | undefined;
  const unsubscribe = registerProcessTracing({ serviceName: 'test-producer' }).subscribe((spans) => store.add(spans));
  const runtime = (environment: Record<string, string>) => {
    const created = new FunctionRuntime({
      functionName: 'traced-fixture', file: bundle, exportName: 'handler', timeoutMs: 5_000, environment,
      onSpans: (spans, functionName) => {
        fromFunctions.push({ spans, functionName });
        store.add(spans);
      },
    });
    runtimes.push(created);
    return created;
  };

  before(async () => {
    // Bundled as the CDK bundles a function: its own copy of @opentelemetry/api inside.
    await build({ entryPoints: [FIXTURE], outfile: bundle, bundle: true, platform: 'node', format: 'esm', target: 'node22', logLevel: 'silent' });
    endpoint = await serveTraces(store);
  });
  after(async () => {
    unsubscribe();
    await Promise.all(runtimes.map((fn) => fn.stop()));
    await endpoint?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('collects a bundled handler\'s spans, flushed before its result, as children of the producer\'s span', async () => {
    // GIVEN the fixture bundled with its own API copy, in a function with the layer's environment
    assert.match(readFileSync(bundle, 'utf8'), /opentelemetry\.js\.api/, 'the bundle carries its own @opentelemetry/api');
    const fn = runtime(LAYER_ENVIRONMENT);
    // WHEN a job produced in this process is delivered to it
    const sent = produce('job-1', 'key-1');
    const answer = await fn.invoke(sqsEvent('job-1', sent.traceparent)) as { written: string[]; recording: boolean };

    // THEN its spans are in the store by the time the result is back (flushed before it)
    const [view] = store.query('job-1').traces;
    assert.ok(view, 'the job\'s trace');
    assert.equal(view.traceId, sent.traceId);
    const byName = new Map(view.spans.map((span) => [span.name, span]));
    assert.deepEqual([...byName.keys()].sort(), ['ballast.claim', 'ballast.commit', 'ballast.produce', 'ballast.record']);
    const record = byName.get('ballast.record');
    assert.equal(record?.parentSpanId, sent.spanId, 'the record span is a child of the producer span (traceparent)');
    assert.equal(byName.get('ballast.claim')?.parentSpanId, record?.spanId, 'the active span crosses awaits (AsyncLocalStorage)');
    assert.equal(byName.get('ballast.commit')?.parentSpanId, record?.spanId);
    assert.equal(record?.kind, 'CONSUMER');
    assert.equal(record?.service, 'fixture-worker', 'OTEL_SERVICE_NAME');
    assert.equal(record?.functionName, 'traced-fixture');
    assert.equal(byName.get('ballast.produce')?.service, 'test-producer');
    assert.equal(record?.attributes['ballast.outcome'], 'processed');
    // AND the record links to the batch span, in its own trace (sampled out: no parent, ratio 0)
    assert.equal(record?.links.length, 1);
    assert.equal(answer.recording, false, 'a root span is sampled by the ratio, here 0');
    assert.ok(!fromFunctions.some(({ spans }) => spans.some((span) => span.name === 'ballast.batch')));
    // AND the context the handler writes on (the committed item's traceparent) is the same trace
    assert.match(answer.written[0] ?? '', new RegExp(`^00-${sent.traceId}-[0-9a-f]{16}-01$`));
    // AND times are epoch ms with sub-millisecond precision, in order
    assert.ok((record?.startEpochMs ?? 0) >= (byName.get('ballast.produce')?.startEpochMs ?? Infinity));
    // (The SDK starts a span at Date.now() and measures its duration with the performance clock.)
    assert.ok(view.spans.some((span) => !Number.isInteger(span.endEpochMs)), 'sub-millisecond durations');
    assert.ok(Math.abs((record?.startEpochMs ?? 0) - Date.now()) < 10_000, 'epoch milliseconds');
  });

  it('records a span\'s error status and exception; without the layer\'s variable the API stays a no-op', async () => {
    const sent = produce('job-2', 'key-2');
    await runtime(LAYER_ENVIRONMENT).invoke(sqsEvent('job-2', sent.traceparent, true));
    const commit = store.query('job-2').traces[0]?.spans.find((span) => span.name === 'ballast.commit');
    assert.equal(commit?.status.code, 'ERROR');
    assert.equal(commit?.status.message, 'transaction refused');
    assert.equal(commit?.events[0]?.name, 'exception');
    assert.deepEqual(commit?.attributes['ballast.commit.cancellation_reasons'], ['ConditionalCheckFailed']);

    // WHEN the function's environment has no AWS_LAMBDA_EXEC_WRAPPER THEN no SDK: nothing recorded
    const before = fromFunctions.length;
    const plain = produce('job-3', 'key-3');
    const answer = await runtime({ OTEL_SERVICE_NAME: 'untraced' }).invoke(sqsEvent('job-3', plain.traceparent)) as { written: string[] };
    assert.equal(fromFunctions.length, before);
    assert.deepEqual(answer.written, [''], 'no propagator registered');
    assert.deepEqual(store.query('job-3').traces[0]?.spans.map((span) => span.name), ['ballast.produce']);
  });

  it('ballast trace prints the job\'s tree from the published span endpoint; --json gives the spans', async () => {
    // GIVEN a local cloud description that names the span endpoint
    const file = join(dir, 'local.json');
    process.env.BALLAST_LOCAL_FILE = file;
    const outputs = Object.fromEntries(STACK_OUTPUTS.map((name) => [name, `local-${name}`]));
    const publish = (environment: Record<string, string>) => writeLocalCloudFile({
      pid: process.pid, stackName: 'ballast-local', region: 'us-east-1', environment, outputs, startedAt: new Date().toISOString(),
    }, file);
    const cli = async (args: string[]) => {
      const [stdout, stderr] = [new PassThrough(), new PassThrough()];
      const chunks = { out: '', err: '' };
      stdout.on('data', (chunk: Buffer) => void (chunks.out += chunk.toString('utf8')));
      stderr.on('data', (chunk: Buffer) => void (chunks.err += chunk.toString('utf8')));
      const code = await runCli(args, { io: { stdin: Readable.from(['']), stdout, stderr } });
      return { code, ...chunks };
    };
    try {
      delete process.env[TRACES_URL_VARIABLE];
      publish({ [TRACES_URL_VARIABLE]: endpoint?.url ?? '' });

      // WHEN an operator traces the job by its id
      const text = await cli(['trace', 'job-2', '--env', 'local']);
      // THEN the tree: produce at the root, the record under it, claim and commit under the record, the failure marked
      assert.equal(text.code, 0, text.err);
      const lines = text.out.split('\n');
      assert.match(lines[0] ?? '', /^'job-2' is a jobId: 1 trace$/);
      const spanLines = lines.filter((line) => /^\s+\+/.test(line));
      assert.match(spanLines[0] ?? '', /^\s+\+0\.00 ms\s+\S+ ms {2}produce {2}job job-2, fixture\.job {2}\[test-producer\]$/);
      assert.match(spanLines[1] ?? '', /└─ record {2}attempt 1, outcome retry {2}\[fixture-worker\]$/);
      assert.match(spanLines[2] ?? '', /^\s+\+\S+ ms\s+\S+ ms {5}├─ claim {2}fence 7$/);
      assert.match(spanLines[3] ?? '', / {5}└─ ✗ commit {2}outcome refused, cancellation reasons \[ConditionalCheckFailed/);
      for (const line of lines) assert.ok(line.length <= 100, line);
      const wide = await cli(['trace', 'job-2', '--width', '160']);
      assert.match(wide.out, /└─ ✗ commit {2}outcome refused, cancellation reasons \[ConditionalCheckFailed\] {2}error: transaction refused\n/);

      // AND by idempotency key and trace id, the same trace; --json carries the spans
      const id = store.query('job-2').traces[0]?.traceId ?? '';
      const json = await cli(['trace', 'key-2', '--json']);
      assert.equal(json.code, 0);
      const parsed = JSON.parse(json.out) as { matchedBy: string[]; traces: { traceId: string; spans: SpanRecord[] }[] };
      assert.deepEqual(parsed.matchedBy, ['idempotencyKey']);
      assert.equal(parsed.traces[0]?.traceId, id);
      assert.equal(parsed.traces[0]?.spans.length, 4);
      assert.equal((await cli(['trace', id])).code, 0);

      // AND nothing found is exit 1; no span endpoint in the description is exit 3
      const missing = await cli(['trace', 'no-such-job']);
      assert.deepEqual([missing.code, missing.out], [1, '']);
      assert.match(missing.err, /no trace of 'no-such-job'/);
      delete process.env[TRACES_URL_VARIABLE];
      publish({});
      const unreachable = await cli(['trace', 'job-2']);
      assert.equal(unreachable.code, 3);
      assert.match(unreachable.err, /publishes no span endpoint/);
    } finally {
      delete process.env[TRACES_URL_VARIABLE];
      delete process.env.BALLAST_LOCAL_FILE;
    }
  });
  it('the span endpoint takes another process\'s spans (checked for shape) and lists recent jobs', async () => {
    const url = endpoint?.url ?? '';
    const post = (body: string, type = 'application/json') => fetch(`${url}/spans`, { method: 'POST', headers: { 'content-type': type }, body });
    const foreign: SpanRecord = {
      traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), name: 'ballast.produce', kind: 'PRODUCER', startEpochMs: Date.now() - 5, endEpochMs: Date.now(),
      status: { code: 'OK' }, attributes: { 'ballast.job.id': 'job-from-cli' }, events: [], links: [], service: 'ballast-cli',
    };
    // WHEN another process posts its spans THEN they are queryable like the cloud's own
    const accepted = await post(JSON.stringify({ spans: [foreign] }));
    assert.equal(accepted.status, 202);
    assert.deepEqual(await accepted.json(), { accepted: 1 });
    assert.equal(store.query('job-from-cli').traces[0]?.spans[0]?.service, 'ballast-cli');
    // AND what is not a span, not JSON, or not sent as JSON is refused, naming the field
    const invalid = await post(JSON.stringify({ spans: [{ ...foreign, spanId: 'nope' }] }));
    assert.equal(invalid.status, 400);
    assert.match(((await invalid.json()) as { message: string }).message, /spans\[0\]: spanId/);
    assert.equal((await post('{')).status, 400);
    assert.equal((await post(JSON.stringify({ spans: [foreign] }), 'text/plain')).status, 415);
    // AND the recent jobs list names it first; a query without a key is refused
    const { jobs } = await (await fetch(`${url}/jobs?limit=2`)).json() as { jobs: { jobId: string }[] };
    assert.equal(jobs[0]?.jobId, 'job-from-cli');
    assert.equal(jobs.length, 2);
    assert.equal((await fetch(`${url}/traces?key=`)).status, 400);
    assert.equal((await fetch(`${url}/jobs?limit=0`)).status, 400);
  });
});
