import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Page } from 'playwright-core';
import { startLocalCloud } from '../../local/cloud/index.ts';
import { synthesize } from '../../local/cloud/assembly.ts';
import { serveConsole } from '../../local/console/server.ts';
import { runDemo } from '../../local/demo/run.ts';
import { startWorkloadFakes } from '../../local/external-api/index.ts';
import type { LocalEndpoint } from '../../local/http.ts';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { JOB_CATALOG, WORKLOADS } from '../fixtures/workloads/registry.ts';
import { useEngines } from '../helpers/engines.ts';
import { browserMissing, useBrowser } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

const SCREENSHOT = fileURLToPath(new URL('../../bench/results/console.png', import.meta.url));
const RENDER_RESULTS = fileURLToPath(new URL('../../bench/results/console-render.json', import.meta.url));

/** What the page says about every widget: its index, type, title and drawn state (`data`, `no-data`, `text`, `loading`). */
async function widgetStates(page: Page) {
  return page.$$eval('.widget', (elements) => elements.map((element) => ({
    index: Number(element.getAttribute('data-widget-index')),
    type: element.getAttribute('data-widget-type'),
    state: element.getAttribute('data-state'),
    title: element.querySelector('h3')?.textContent ?? '',
    errors: element.querySelector('.errors')?.textContent ?? '',
    canvas: element.querySelector('canvas') !== null,
  })));
}

describe('the local console in a real browser (chromium)', { skip: browserMissing }, () => {
  const local = useEngines();
  const browser = useBrowser();

  it('draws every widget of the synthesized dashboard from the demo\'s traffic, shows a dead letter on click and replays after a dry run', async () => {
    // GIVEN the shipped stack on the local cloud, its console, and the demo's traffic
    const fakes = await startWorkloadFakes(WORKLOADS);
    const cloud = await startLocalCloud({ engines: local.engines, context: fakes.settings });
    let served: LocalEndpoint | undefined;
    const page = await browser().newPage({ viewport: { width: 1600, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      served = await serveConsole({ cloud, sqs: local.sqs, documents: local.documents, catalog: JOB_CATALOG });
      const demo = runDemo({ cloud, sqs: local.sqs, workloads: WORKLOADS, jobs: 400, durationMs: 15_000, log: () => undefined, isShuttingDown: () => false });
      await page.goto(served.url);
      const widgets = cloud.resources.dashboards[0];
      assert.ok(widgets && 'body' in widgets, 'the dashboard resolves locally');
      const synthesized = widgets.body.widgets as { type: string; properties?: { title?: string } }[];

      // WHEN the demo's traffic reaches the queue and processing widgets
      const hasData = async (title: string) => (await widgetStates(page)).some((w) => w.title === title && w.state === 'data');
      await waitFor('the queue widget to show traffic', () => hasData('Message Count'), 60_000, 500);
      await waitFor('the processing widget to show jobs', () => hasData('Jobs processed and duplicates suppressed'), 60_000, 500);
      await demo;
      await waitFor('the DLQ widget to show dead letters', () => hasData('DLQ: Message Count'), 30_000, 500);
      await page.waitForTimeout(5_500); // one more refresh with the whole run in it

      // THEN every widget of the synthesized dashboard is on the page, in order, drawn
      const states = await widgetStates(page);
      assert.equal(states.length, synthesized.length, 'one element per synthesized widget');
      assert.deepEqual(states.map((w) => w.type), synthesized.map((w) => w.type));
      for (const widget of states) {
        assert.ok(['data', 'no-data', 'text'].includes(widget.state ?? ''), `widget ${widget.index} "${widget.title}" is ${widget.state}`);
        assert.equal(widget.errors, '', `widget ${widget.index} "${widget.title}": every query is answered locally`);
        if (widget.type === 'metric' && widget.state === 'data') assert.ok(widget.canvas, `widget ${widget.index} "${widget.title}" has a chart`);
      }
      // AND a widget is drawn with data exactly when the local metrics have datapoints for it
      const answered = await (await fetch(`${served.url}/api/dashboard-data?periodSeconds=10&rangeSeconds=300`)).json() as { widgets: ({ lines: { points: unknown[] }[] } | null)[] };
      for (const widget of states.filter((w) => w.type === 'metric')) {
        const points = answered.widgets[widget.index]?.lines.reduce((sum, line) => sum + line.points.length, 0) ?? 0;
        assert.equal(widget.state, points > 0 ? 'data' : 'no-data', `widget ${widget.index} "${widget.title}"`);
      }
      const withData = states.filter((w) => w.type === 'metric' && w.state === 'data').map((w) => w.title);
      for (const title of ['Message Count', 'Producer vs Consumer (rate)', 'Jobs queue: receives vs deletes (gap = redeliveries)', 'Worker duration p99 vs timeout',
        'Jobs processed and duplicates suppressed', 'Duplicate rate', 'Jobs sent to the DLQ by reason', 'Invalidation lag (commit to tombstone)', 'Cache hit ratio']) {
        assert.ok(withData.includes(title), `"${title}" is drawn with data; with data: ${withData.join(' | ')}`);
      }
      assert.ok(states.some((w) => w.type === 'alarm' && w.state === 'data'), 'the alarm widget shows every alarm\'s state');
      // The legends stay the rows' own labels across refreshes (a chart is updated in place, not rebuilt)
      const legend = await page.$eval('.widget.metric', (widget) => [...widget.querySelectorAll('.u-legend .u-label')].map((label) => label.textContent));
      assert.deepEqual(legend.slice(-2), ['Visible', 'Incoming']);
      // and their window moves with the clock (the first chart was built tens of seconds ago)
      const windowEndMs = await page.evaluate('state.charts.get(document.querySelector(".widget.metric").dataset.widgetIndex).plot.scales.x.max * 1000') as number;
      assert.ok(windowEndMs > Date.now() - 12_000, `the window ends ${Math.round((Date.now() - windowEndMs) / 1000)} s ago`);
      mkdirSync(fileURLToPath(new URL('../../bench/results/', import.meta.url)), { recursive: true });
      await page.screenshot({ path: SCREENSHOT });

      // AND it stays usable at thousands of points per series: 1 s over an hour (the FILLed lines have 3,600)
      const refreshMs = () => page.evaluate('(async () => { const t = performance.now(); await refreshDashboard(); return performance.now() - t; })()') as Promise<number>;
      const defaultRefreshMs = await refreshMs();
      await page.selectOption('#period', '1');
      await page.selectOption('#range', '3600');
      await waitFor('a widget drawn with 3,000 points or more', async () => (await page.$$eval('.widget[data-points]', (elements) => elements
        .map((element) => Number(element.getAttribute('data-points')) / Math.max(1, Number(element.getAttribute('data-lines')))))).some((perLine) => perLine >= 3_000), 30_000, 500);
      const denseRefreshMs = await refreshMs();
      writeFileSync(RENDER_RESULTS, `${JSON.stringify({
        note: 'one refresh of the whole dashboard (every widget\'s data fetched and drawn) in headless chromium, same page, same run',
        metricWidgets: states.filter((w) => w.type === 'metric').length,
        period10sRange5min: { refreshMs: Math.round(defaultRefreshMs) },
        period1sRange1h: { refreshMs: Math.round(denseRefreshMs), pointsPerFilledLine: 3_600 },
        ratio: Number((denseRefreshMs / defaultRefreshMs).toFixed(2)),
      }, null, 2)}\n`);
      await page.selectOption('#period', '10');
      await page.selectOption('#range', '300');

      // WHEN an operator opens the dead letters and clicks one
      await page.click('nav button[data-tab="dead-letters"]');
      await page.waitForSelector('#dlq-messages tbody tr', { timeout: 10_000 });
      const messageId = await page.$eval('#dlq-messages tbody tr', (row) => row.getAttribute('data-message-id') ?? '');
      await page.click('#dlq-messages tbody tr');
      // THEN `dlq show` is what the page shows
      await page.waitForFunction(`document.querySelector('#dlq-detail-json')?.textContent?.includes(${JSON.stringify(messageId)})`, undefined, { timeout: 10_000 });
      const shown = JSON.parse(await page.$eval('#dlq-detail-json', (pre) => pre.textContent ?? '{}')) as { messageId: string; reason: string };
      assert.equal(shown.messageId, messageId);

      // WHEN they replay the dead letters of one reason: a dry run first, and only a confirmation sends
      const reason = await page.$eval('#dlq-reasons [data-replay-reason]', (button) => button.getAttribute('data-replay-reason') ?? '');
      const before = (await (await fetch(`${served.url}/api/dead-letters`)).json() as { reasons: { reason: string; count: number }[] }).reasons.find((r) => r.reason === reason)?.count;
      await page.click(`#dlq-reasons [data-replay-reason="${reason}"]`);
      await page.waitForSelector('#replay-plan tbody tr', { timeout: 10_000 });
      assert.match(await page.$eval('#replay-what', (e) => e.textContent ?? ''), /dry run/);
      const afterDryRun = (await (await fetch(`${served.url}/api/dead-letters`)).json() as { reasons: { reason: string; count: number }[] }).reasons.find((r) => r.reason === reason)?.count;
      assert.equal(afterDryRun, before, 'the dry run changed nothing');
      await page.click('#replay-confirm');
      await page.waitForFunction(`/replayed \\d+ of \\d+/.test(document.querySelector('#replay-result')?.textContent ?? '')`, undefined, { timeout: 20_000 });
      assert.deepEqual(pageErrors, []);

      // AND the one write refuses what the page never sends: a cross-site form, a replay by reason without its dry run's messages, bad JSON
      const replayUrl = `${served.url}/api/dead-letters/replay`;
      const replay = (body: string, contentType = 'application/json') => fetch(replayUrl, { method: 'POST', headers: { 'content-type': contentType }, body });
      assert.equal((await replay(JSON.stringify({ reasons: [reason], dryRun: false, confirm: true }), 'text/plain')).status, 415);
      assert.equal((await replay(JSON.stringify({ reasons: [reason], dryRun: false, confirm: true }))).status, 400);
      assert.equal((await replay(JSON.stringify({ messageIds: [messageId], dryRun: false }))).status, 400, 'no confirm');
      assert.equal((await replay('{not json')).status, 400);
      assert.equal((await replay(JSON.stringify({ reasons: 'one,two' }))).status, 400, 'reasons is a list');
    } finally {
      await page.close();
      await served?.stop();
      await cloud.stop({ graceMs: 2_000 });
      await fakes.stop();
    }
  });

  it('a widget added to the dashboard in the CDK app appears in the console, with no change under local/; a deployment shows its timeline', async () => {
    // GIVEN an app whose dashboard has one more widget than the shipped one
    const fakes = await startWorkloadFakes(WORKLOADS);
    const fixtureApp = fileURLToPath(new URL('../fixtures/app-with-extra-worker.ts', import.meta.url));
    const cloud = await startLocalCloud({ engines: local.engines, context: fakes.settings, appFile: fixtureApp });
    let served: LocalEndpoint | undefined;
    const page = await browser().newPage({ viewport: { width: 1600, height: 1000 } });
    try {
      served = await serveConsole({ cloud, sqs: local.sqs, documents: local.documents, catalog: JOB_CATALOG });
      const audit = cloud.resources.queues.find((queue) => queue.logicalId.startsWith('AuditQueue'));
      assert.ok(audit);
      await local.sqs.send(new SendMessageCommand({
        QueueUrl: audit.url, MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-console', payload: { amount: 1 } })),
      }));
      // WHEN the console is opened THEN the new widget is there, drawn from the audit queue's metrics
      await page.goto(served.url);
      await waitFor('the added widget to show the audit queue', async () => (await widgetStates(page))
        .some((w) => w.title === 'Audit queue: sent and deleted' && w.state === 'data'), 30_000, 500);

      // WHEN the same app with a new worker version is deployed (env=local deploys all at once)
      const [next] = await synthesize({ appFile: fixtureApp, context: { env: 'local', workerVersion: 'extra-test-2', ...fakes.settings } });
      assert.ok(next);
      try {
        await page.click('nav button[data-tab="deployments"]');
        const outcome = await cloud.updateStack(next);
        assert.equal(outcome.status, 'UPDATE_COMPLETE');
        // THEN the Deployments tab shows its timeline: the hooks, the traffic shift, the end
        await waitFor('the update\'s timeline', async () => /UPDATE_COMPLETE/.test(await page.$eval('#deployment-list', (e) => e.textContent ?? '')), 15_000, 250);
        const timeline = await page.$eval('#deployment-list .timeline', (e) => e.textContent ?? '');
        for (const kind of ['hook', 'shift', 'end']) assert.match(timeline, new RegExp(`\\b${kind}\\b`), timeline);
      } finally {
        rmSync(next.assemblyDir, { recursive: true, force: true });
      }
    } finally {
      await page.close();
      await served?.stop();
      await cloud.stop({ graceMs: 2_000 });
      await fakes.stop();
    }
  });
});
