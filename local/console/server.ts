import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { refusalMessage } from '../iam/authorizer.ts';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { widgetData, type MetricWidgetProperties } from '../cloudwatch/index.ts';
import type { LocalCloud } from '../cloud/index.ts';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';
import { describeDeadLetter } from '../../shared/operations/dlq-messages.ts';
import { listDeadLetters, replayDeadLetters, type DlqLocation } from '../../shared/operations/dlq.ts';
import type { JobCatalog } from '../../shared/workloads/job-types.ts';
import { layoutTrace } from '../../shared/operations/trace-tree.ts';

const require = createRequire(import.meta.url);

export interface ConsoleOptions {
  readonly cloud: LocalCloud;
  /** Clients of the local engines, for the dead-letter views and replays. */
  readonly sqs: SQSClient;
  readonly documents: DynamoDBDocumentClient;
  /** The job types a replayed payload must still validate against. */
  readonly catalog: JobCatalog;
  /** @default 0 - a free port */
  readonly port?: number;
}

/** The page's own files and the charting library's, by the path they are served at: nothing else on disk is reachable. */
const ASSETS: Record<string, { readonly file: URL; readonly type: string }> = {
  '/': { file: new URL('./page/index.html', import.meta.url), type: 'text/html; charset=utf-8' },
  '/console.js': { file: new URL('./page/console.js', import.meta.url), type: 'text/javascript; charset=utf-8' },
  '/traces.js': { file: new URL('./page/traces.js', import.meta.url), type: 'text/javascript; charset=utf-8' },
  '/console.css': { file: new URL('./page/console.css', import.meta.url), type: 'text/css; charset=utf-8' },
  // Where the package manager put uPlot (hoisted beside ballast, or under it).
  '/uplot.js': { file: pathToFileURL(require.resolve('uplot/dist/uPlot.iife.min.js')), type: 'text/javascript; charset=utf-8' },
  '/uplot.css': { file: pathToFileURL(require.resolve('uplot/dist/uPlot.min.css')), type: 'text/css; charset=utf-8' },
};

/** Most recent jobs the Traces tab lists. */
const MAX_RECENT_JOBS = 200;

/** Longest window a dashboard is asked for (CloudWatch's own default is 3 hours; a local run is shorter). */
const MAX_RANGE_SECONDS = 3 * 3600;

/**
 * The local console: the stack's own CloudWatch dashboard (the synthesized
 * `AWS::CloudWatch::Dashboard` body, every widget in its layout) drawn live from the local
 * metrics, next to the alarms with their history, the deployments' timelines and the dead
 * letters (list by reason, one message, replay with a dry run first) and the traces of the local
 * span store (a job's, a trace's or an idempotency key's tree, as `ballast trace` lays it out). It
 * is a read-mostly view of the running local cloud; the only write is a confirmed replay, through
 * the same code as `ballast dlq replay`.
 */
export function serveConsole(options: ConsoleOptions): Promise<LocalEndpoint> {
  return listenLocal((request, response) => handle(options, request, response), options.port ?? 0);
}

async function handle(options: ConsoleOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://console');
  const asset = ASSETS[url.pathname];
  if (asset && request.method === 'GET') {
    response.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
    response.end(await readFile(fileURLToPath(asset.file)));
    return;
  }
  const { cloud } = options;
  const location: DlqLocation = {
    sqs: options.sqs, deadLetterQueueUrl: cloud.resources.outputs.JobsDeadLetterQueueUrl ?? '', defaultSourceQueueUrl: cloud.resources.outputs.JobsQueueUrl ?? '',
  };
  const route = `${request.method} ${url.pathname}`;
  switch (route) {
    case 'GET /api/dashboards':
      return json(response, 200, {
        stackName: cloud.resources.stackName,
        dashboards: cloud.resources.dashboards,
        metricNowMs: cloud.metrics.clock(),
      });
    case 'GET /api/dashboard-data': {
      const index = Number(url.searchParams.get('dashboard') ?? 0);
      const dashboard = cloud.resources.dashboards[index];
      if (!dashboard || !('body' in dashboard)) return json(response, 404, { message: `no drawable dashboard ${index}` });
      const periodSeconds = Number(url.searchParams.get('periodSeconds') ?? 10);
      const rangeSeconds = Math.min(Number(url.searchParams.get('rangeSeconds') ?? 900), MAX_RANGE_SECONDS);
      if (!(periodSeconds >= 1 && rangeSeconds >= periodSeconds)) return json(response, 400, { message: 'periodSeconds must be at least 1 and rangeSeconds at least periodSeconds' });
      const endMs = cloud.metrics.clock();
      const window = { startMs: endMs - rangeSeconds * 1000, endMs, periodSeconds };
      const widgets = (dashboard.body.widgets as { type?: string; properties?: MetricWidgetProperties }[] | undefined) ?? [];
      return json(response, 200, {
        endMs,
        widgets: widgets.map((widget) => (widget.type === 'metric' ? widgetData(widget.properties ?? {}, cloud.metrics.series, window) : null)),
      });
    }
    case 'GET /api/alarms':
      return json(response, 200, {
        alarms: cloud.alarms.statuses(), history: cloud.alarms.history(), metricNowMs: cloud.metrics.clock(),
        // What reached on-call and what the topic refused (the local SNS's outbox and refusals).
        notifications: { ...cloud.sns.summary(), outbox: cloud.sns.outbox().slice(-50), refusals: cloud.sns.refusals().slice(-50).map((refusal) => ({ ...refusal, message: refusalMessage(refusal.decision) })) },
      });
    case 'GET /api/traces': {
      const key = url.searchParams.get('key')?.trim() ?? '';
      if (key === '') return json(response, 400, { message: 'name what to trace: a job id, a trace id or an idempotency key' });
      const result = cloud.traces.query(key);
      return json(response, 200, { key: result.key, matchedBy: result.matchedBy, traces: result.traces.map(layoutTrace) });
    }
    case 'GET /api/traces/recent': {
      const limit = Math.min(Number(url.searchParams.get('limit') ?? 50), MAX_RECENT_JOBS);
      if (!(Number.isInteger(limit) && limit >= 1)) return json(response, 400, { message: `limit is an integer from 1 to ${MAX_RECENT_JOBS}` });
      return json(response, 200, { jobs: cloud.traces.recentJobs(limit), traceCount: cloud.traces.traceCount });
    }
    case 'GET /api/deployments':
      return json(response, 200, { deployments: cloud.deployments() });
    case 'GET /api/dead-letters': {
      const listing = await listDeadLetters(location);
      return json(response, 200, { ...listing, messages: listing.messages.map(describeDeadLetter) });
    }
    case 'POST /api/dead-letters/replay': {
      // JSON only: a cross-site form (text/plain, no preflight) cannot reach the one write.
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) return json(response, 415, { message: 'send the replay request as application/json' });
      const request_ = replayRequest(await readBody(request));
      if (typeof request_ === 'string') return json(response, 400, { message: request_ });
      const report = await replayDeadLetters(location, {
        filter: request_.filter, documents: options.documents, controlTableName: cloud.resources.outputs.ControlTableName ?? '',
        catalog: options.catalog, dryRun: request_.dryRun,
      });
      return json(response, 200, report);
    }
    default:
      if (request.method === 'GET' && url.pathname.startsWith('/api/dead-letters/')) {
        let messageId: string;
        try {
          messageId = decodeURIComponent(url.pathname.slice('/api/dead-letters/'.length));
        } catch {
          return json(response, 400, { message: 'the message id is not a valid URL component' });
        }
        const letter = (await listDeadLetters(location, { messageIds: [messageId] })).messages[0];
        return letter ? json(response, 200, describeDeadLetter(letter)) : json(response, 404, { message: `no dead letter ${messageId}` });
      }
      return json(response, 404, { message: `no ${route}` });
  }
}

/**
 * A replay request, or what is wrong with it. A dry run selects by `reasons` or `messageIds`; a real
 * replay takes the `messageIds` its dry run showed (and `confirm: true`), so what is sent is what
 * the operator saw — never a dead letter that arrived after the dry run.
 */
function replayRequest(text: string): { filter: { messageIds?: string[]; reasons?: string[] }; dryRun: boolean } | string {
  let body: unknown;
  try {
    body = JSON.parse(text || '{}');
  } catch {
    return 'the body is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body is a JSON object: { reasons | messageIds, dryRun, confirm }';
  const { messageIds, reasons, dryRun, confirm } = body as Record<string, unknown>;
  const strings = (value: unknown) => value === undefined || (Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== ''));
  if (!strings(messageIds) || !strings(reasons)) return 'messageIds and reasons are arrays of non-empty strings';
  const filter = { messageIds: messageIds as string[] | undefined, reasons: reasons as string[] | undefined };
  if (dryRun !== false) {
    if (!filter.messageIds?.length && !filter.reasons?.length) return 'choose what to replay: messageIds or reasons';
    return { filter, dryRun: true };
  }
  if (confirm !== true || !filter.messageIds?.length || filter.reasons) return 'a replay sends the messageIds its dry run showed, with confirm: true';
  return { filter: { messageIds: filter.messageIds }, dryRun: false };
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}
