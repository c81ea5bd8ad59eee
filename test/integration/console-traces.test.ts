import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { startLocalCloud } from '../../local/cloud/index.ts';
import { serveConsole } from '../../local/console/server.ts';
import { demoWorkload } from '../../local/demo/workload.ts';
import { startWorkloadFakes } from '../../local/external-api/index.ts';
import type { LocalEndpoint } from '../../local/http.ts';
import { ATTRIBUTES, SPANS, TRACEPARENT_MESSAGE_ATTRIBUTE } from '../../shared/tracing/names.ts';
import { JOB_CATALOG, WORKLOADS } from '../fixtures/workloads/registry.ts';
import { useEngines } from '../helpers/engines.ts';
import { browserMissing, useBrowser } from '../helpers/browser.ts';


describe('the console\'s Traces tab in a real browser (chromium)', { skip: browserMissing }, () => {
  const local = useEngines();
  const browser = useBrowser();

  it('lists a demo job among the recent jobs and shows its trace as a tree with timing bars, by click and by id', async () => {
    // GIVEN the shipped stack on the local cloud and its console
    const fakes = await startWorkloadFakes(WORKLOADS);
    const cloud = await startLocalCloud({ engines: local.engines, context: fakes.settings });
    let served: LocalEndpoint | undefined;
    const page = await browser().newPage({ viewport: { width: 1400, height: 900 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      served = await serveConsole({ cloud, sqs: local.sqs, documents: local.documents, catalog: JOB_CATALOG });
      // AND one of the demo's jobs, sent from this process under a producer span whose context travels as
      // `traceparent` (the cloud collects this process's spans; the functions' join when they are instrumented)
      const { messages } = await demoWorkload(WORKLOADS, { jobs: 20, seed: 7 });
      const demo = messages.map((message) => ({ message, envelope: parse(message.body) })).find((candidate) => candidate.envelope);
      assert.ok(demo?.envelope, 'a well-formed demo job');
      const { jobId, type, idempotencyKey } = demo.envelope;
      const tracer = trace.getTracer('console-traces-test');
      const traceId = await tracer.startActiveSpan('console-test.send', async (operation) => {
        await tracer.startActiveSpan(SPANS.produce, {
          kind: SpanKind.PRODUCER, attributes: { [ATTRIBUTES.jobId]: jobId, [ATTRIBUTES.jobType]: type, [ATTRIBUTES.idempotencyKey]: idempotencyKey },
        }, async (produce) => {
          const carrier: Record<string, string> = {};
          propagation.inject(context.active(), carrier);
          await local.sqs.send(new SendMessageCommand({
            QueueUrl: cloud.resources.outputs.JobsQueueUrl, MessageBody: demo.message.body,
            MessageAttributes: { [TRACEPARENT_MESSAGE_ATTRIBUTE]: { DataType: 'String', StringValue: carrier.traceparent ?? '' } },
          }));
          produce.end();
        });
        operation.end();
        return operation.spanContext().traceId;
      });

      // WHEN an operator opens the Traces tab
      await page.goto(served.url);
      await page.click('nav button[data-tab="traces"]');
      // THEN the job is among the recent jobs, and a click shows its trace
      const item = `#trace-jobs [data-job-id="${jobId}"]`;
      // The tab refreshes every 5 s; a CI machine running another engine-heavy test beside this one
      // once took more than three refreshes to list it (2026-12-03).
      await page.waitForSelector(item, { timeout: 30_000 });
      await page.click(item);
      const produceRow = `.trace[data-trace-id="${traceId}"] .span-row[data-name="${SPANS.produce}"]`;
      await page.waitForSelector(produceRow, { timeout: 10_000 });
      assert.match(await page.$eval('#trace-summary', (e) => e.textContent ?? ''), /is a jobId: 1 trace/);
      // AS a tree: the produce span one level under the operation that sent it, with its job inline and a timing bar
      const rows = await page.$$eval(`.trace[data-trace-id="${traceId}"] .span-row`, (elements) => elements.map((row) => ({
        name: row.getAttribute('data-name'), depth: Number(row.getAttribute('data-depth')),
        text: row.querySelector('.span-name')?.textContent ?? '', time: row.querySelector('.span-time')?.textContent ?? '',
        barWidthPx: row.querySelector('.span-bar')?.getBoundingClientRect().width ?? 0,
      })));
      assert.deepEqual(rows.slice(0, 2).map((row) => [row.name, row.depth]), [['console-test.send', 0], [SPANS.produce, 1]]);
      const produced = rows[1];
      assert.match(produced?.text ?? '', new RegExp(`produce\\s+job ${jobId}, ${type.replace('.', '\\.')}`));
      assert.match(produced?.time ?? '', /^\+\d+\.\d+ m?s · \d+\.\d+ m?s$/);
      for (const row of rows) assert.ok(row.barWidthPx >= 1, `${row.name} has a bar`);

      // WHEN they type its trace id instead THEN the same trace
      await page.click('nav button[data-tab="dashboard"]');
      await page.click('nav button[data-tab="traces"]');
      await page.fill('#trace-key', traceId);
      await page.click('#trace-form button[type="submit"]');
      await page.waitForFunction(`/is a traceId/.test(document.querySelector('#trace-summary')?.textContent ?? '')`, undefined, { timeout: 10_000 });
      assert.equal(await page.$$eval('.trace', (traces) => traces.length), 1);
      assert.deepEqual(pageErrors, []);
      // AND a query for nothing says so
      await page.fill('#trace-key', 'no-such-job');
      await page.click('#trace-form button[type="submit"]');
      await page.waitForFunction(`/no trace of 'no-such-job'/.test(document.querySelector('#trace-summary')?.textContent ?? '')`, undefined, { timeout: 10_000 });
    } finally {
      await page.close();
      await served?.stop();
      await cloud.stop({ graceMs: 2_000 });
      await fakes.stop();
    }
  });
});

function parse(body: string): { jobId: string; type: string; idempotencyKey: string } | undefined {
  try {
    const envelope = JSON.parse(body) as { jobId?: unknown; type?: unknown; idempotencyKey?: unknown };
    return typeof envelope.jobId === 'string' && typeof envelope.type === 'string' && typeof envelope.idempotencyKey === 'string'
      ? { jobId: envelope.jobId, type: envelope.type, idempotencyKey: envelope.idempotencyKey } : undefined;
  } catch {
    return undefined;
  }
}
