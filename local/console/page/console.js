// The local console's page: draws the stack's synthesized dashboard (every widget, in its own
// layout) from /api/dashboard-data, and the alarms, deployments, dead letters and traces beside it. Plain
// browser JavaScript served as is, with uPlot (global `uPlot`) for the charts: no build step, no CDN.
'use strict';

const REFRESH_MS = 5_000;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const state = { dashboards: [], charts: new Map(), tab: 'dashboard', replay: undefined, traceKey: '' };

const $ = (selector) => document.querySelector(selector);
const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const time = (ms) => new Date(ms).toLocaleTimeString();

async function api(path, init) {
  const response = await fetch(path, init);
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || `${path}: ${response.status}`);
  return body;
}

/** The small markdown CloudWatch text widgets use: headings, bold, links. */
function markdown(text) {
  return text.split('\n').map((line) => {
    let html = escapeHtml(line)
      .replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>')
      .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noreferrer">$1</a>');
    const heading = /^(#{1,6})\s+(.*)$/.exec(html);
    if (heading) html = `<h${Math.min(heading[1].length, 3)}>${heading[2]}</h${Math.min(heading[1].length, 3)}>`;
    return html;
  }).join('<br>');
}

function buildGrid(body) {
  const grid = $('#grid');
  grid.replaceChildren();
  state.charts.clear();
  (body.widgets || []).forEach((widget, index) => {
    const element = document.createElement('div');
    element.className = `widget ${widget.type}`;
    element.dataset.widgetIndex = String(index);
    element.dataset.widgetType = widget.type;
    element.style.gridColumn = `${(widget.x ?? 0) + 1} / span ${widget.width ?? 6}`;
    element.style.gridRow = `${(widget.y ?? 0) + 1} / span ${widget.height ?? 6}`;
    const properties = widget.properties || {};
    if (widget.type === 'text') {
      element.innerHTML = markdown(properties.markdown || '');
      element.dataset.state = 'text';
    } else {
      element.innerHTML = `<h3 title="${escapeHtml(properties.title || '')}">${escapeHtml(properties.title || '(untitled)')}</h3><div class="chart"></div><div class="errors"></div>`;
      element.dataset.state = 'loading';
    }
    grid.append(element);
  });
}

/** uPlot wants one x array and one y array per line: align every line on the union of its timestamps. */
function align(lines) {
  const xs = [...new Set(lines.flatMap((line) => line.points.map(([t]) => t)))].sort((a, b) => a - b);
  const index = new Map(xs.map((t, i) => [t, i]));
  const ys = lines.map((line) => {
    const values = new Array(xs.length).fill(null);
    for (const [t, value] of line.points) values[index.get(t)] = value;
    return values;
  });
  return [xs.map((t) => t / 1000), ...ys];
}

/** Draws the widget's horizontal annotations (alarm thresholds, the timeout line) as dashed lines. */
function annotationsPlugin(annotations) {
  return {
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        for (const annotation of annotations) {
          const scale = annotation.yAxis === 'right' ? 'y2' : 'y';
          if (!u.scales[scale] || u.scales[scale].min === undefined) continue;
          const y = u.valToPos(annotation.value, scale, true);
          if (!Number.isFinite(y) || y < u.bbox.top || y > u.bbox.top + u.bbox.height) continue;
          ctx.save();
          ctx.strokeStyle = annotation.color || '#d92d20';
          ctx.setLineDash([6, 4]);
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.moveTo(u.bbox.left, y);
          ctx.lineTo(u.bbox.left + u.bbox.width, y);
          ctx.stroke();
          ctx.fillStyle = annotation.color || '#d92d20';
          ctx.textAlign = 'left';
          ctx.textBaseline = 'bottom';
          ctx.font = `${11 * devicePixelRatio}px system-ui`;
          ctx.fillText(annotation.label || String(annotation.value), u.bbox.left + 4, y - 4);
          ctx.restore();
        }
      }],
    },
  };
}

function drawMetricWidget(element, widget, data, window) {
  const properties = widget.properties || {};
  const chart = element.querySelector('.chart');
  element.querySelector('.errors').textContent = (data.errors || []).join('; ');
  const lines = data.lines || [];
  const points = lines.reduce((sum, line) => sum + line.points.length, 0);
  element.dataset.lines = String(lines.length);
  element.dataset.points = String(points);
  element.dataset.state = points > 0 ? 'data' : 'no-data';
  const key = element.dataset.widgetIndex;
  const previous = state.charts.get(key);
  // Labels with ${AVG}-style values change every refresh: the chart is rebuilt only when its lines do.
  const shape = lines.map((line) => `${line.label.replace(/\d+(\.\d+)?/g, '#')}|${line.yAxis}`).join('\n');
  const aligned = align(lines);
  if (points === 0) {
    previous?.plot.destroy();
    state.charts.delete(key);
    chart.innerHTML = '<div class="empty">No data available.</div>';
    return;
  }
  // The whole window is drawn, as CloudWatch draws it, so a run that just started sits at the right edge.
  const xRange = [window.startMs / 1000, window.endMs / 1000];
  if (previous && previous.shape === shape) {
    previous.xRange = xRange;
    previous.plot.setData(aligned, false);
    previous.plot.setScale('x', { min: xRange[0], max: xRange[1] });
    // The legend has a row per line, after the time row when uPlot shows one.
    const rows = [...previous.plot.root.querySelectorAll('.u-legend .u-series')];
    rows.slice(rows.length - lines.length).forEach((row, i) => { row.querySelector('.u-label').textContent = lines[i].label; });
    return;
  }
  previous?.plot.destroy();
  chart.replaceChildren();
  const left = properties.yAxis?.left || {};
  const right = properties.yAxis?.right || {};
  const hasRight = lines.some((line) => line.yAxis === 'right');
  const { width, height } = chart.getBoundingClientRect();
  // uPlot passes every setScale through the scale's range function: it reads the latest window.
  const entry = { plot: undefined, shape, xRange };
  entry.plot = new uPlot({
    width: Math.max(120, width),
    height: Math.max(60, height - 28),
    legend: { show: true, live: false },
    cursor: { points: { size: 5 } },
    scales: {
      x: { time: true, range: () => entry.xRange },
      y: { range: (u, min, max) => [left.min ?? Math.min(0, min), left.max ?? (max > 0 ? max * 1.1 : 1)] },
      ...(hasRight ? { y2: { range: (u, min, max) => [right.min ?? Math.min(0, min), right.max ?? (max > 0 ? max * 1.1 : 1)] } } : {}),
    },
    axes: [
      { size: 28 },
      { scale: 'y', size: 44, label: left.label, labelSize: left.label ? 14 : 0 },
      ...(hasRight ? [{ scale: 'y2', side: 1, size: 44, grid: { show: false }, label: right.label, labelSize: right.label ? 14 : 0 }] : []),
    ],
    series: [{}, ...lines.map((line, i) => ({
      label: line.label, scale: line.yAxis === 'right' ? 'y2' : 'y', stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false,
      points: { show: aligned[0].length < 40 },
    }))],
    plugins: [annotationsPlugin(properties.annotations?.horizontal || [])],
  }, aligned, chart);
  state.charts.set(key, entry);
}

function drawAlarmWidget(element, widget, alarms) {
  const names = (widget.properties?.alarms || []).map((arn) => String(arn).split(':alarm:').pop());
  const byName = new Map(alarms.map((alarm) => [alarm.name, alarm]));
  element.innerHTML = `<h3>${escapeHtml(widget.properties?.title || 'Alarms')}</h3><div class="alarm-list">${names.map((name) => {
    const alarm = byName.get(name);
    return `<span class="state ${alarm ? alarm.state : 'INSUFFICIENT_DATA'}" title="${escapeHtml(alarm ? alarm.reason : 'not in the stack')}">${escapeHtml(name)}</span>`;
  }).join('')}</div>`;
  element.dataset.state = names.length > 0 && names.every((name) => byName.has(name)) ? 'data' : 'no-data';
  element.dataset.points = String(names.length);
}

async function refreshDashboard() {
  const dashboard = state.dashboards[0];
  if (!dashboard || !dashboard.body) return;
  const query = new URLSearchParams({ dashboard: '0', periodSeconds: $('#period').value, rangeSeconds: $('#range').value });
  const [data, alarms] = await Promise.all([api(`/api/dashboard-data?${query}`), api('/api/alarms')]);
  dashboard.body.widgets.forEach((widget, index) => {
    const element = document.querySelector(`[data-widget-index="${index}"]`);
    if (!element) return;
    if (widget.type === 'metric') drawMetricWidget(element, widget, data.widgets[index] || { lines: [] }, { startMs: data.endMs - Number($('#range').value) * 1000, endMs: data.endMs });
    if (widget.type === 'alarm') drawAlarmWidget(element, widget, alarms.alarms);
  });
  const drawn = document.querySelectorAll('.widget.metric[data-state="data"]').length;
  const metricWidgets = document.querySelectorAll('.widget.metric').length;
  $('#dashboard-note').textContent = `${dashboard.name} — the stack's own dashboard as synthesized for env=local: ${metricWidgets} metric widgets, ${drawn} with data; period ${$('#period').value} s over the last ${Number($('#range').value) / 60} min (metric clock ${time(data.endMs)}).`;
}

async function refreshAlarms() {
  const { alarms, history, notifications } = await api('/api/alarms');
  const firing = alarms.filter((alarm) => alarm.state === 'ALARM').length;
  $('#alarm-badge').textContent = firing ? String(firing) : '';
  $('#alarm-table tbody').innerHTML = alarms.map((alarm) => `<tr data-alarm="${escapeHtml(alarm.name)}"><td><span class="state ${alarm.state}">${alarm.state}</span></td><td>${escapeHtml(alarm.name)}</td><td>${time(alarm.changedAtMs)}</td><td>${escapeHtml(alarm.reason)}</td></tr>`).join('');
  $('#notification-note').textContent = `${notifications.published} published to the alarm topic, ${notifications.delivered} delivered to the local outbox, ${notifications.refused} refused by the topic policy.`;
  const sent = notifications.outbox.map((delivery) => ({ atMs: delivery.atMs, html: `${escapeHtml(delivery.subject)} → ${escapeHtml(`${delivery.protocol}:${delivery.endpoint}`)}` }));
  const refused = notifications.refusals.map((refusal) => ({ atMs: refusal.atMs, html: `<span class="state ALARM">refused</span> ${escapeHtml(refusal.subject)}: ${escapeHtml(refusal.message)}` }));
  const items = [...sent, ...refused].sort((a, b) => b.atMs - a.atMs);
  $('#notification-list').innerHTML = items.length === 0 ? '<li>No notifications yet.</li>' : items.map((item) => `<li>${new Date(item.atMs).toLocaleTimeString()} ${item.html}</li>`).join('');
  $('#alarm-history').innerHTML = history.length === 0 ? '<li>No state changes yet.</li>' : [...history].reverse().map((item) => `<li>${time(item.atMs)} <strong>${escapeHtml(item.name)}</strong>: ${item.from} → <span class="state ${item.to}">${item.to}</span> ${escapeHtml(item.reason)}</li>`).join('');
}

async function refreshDeployments() {
  const { deployments } = await api('/api/deployments');
  $('#deployment-list').innerHTML = [...deployments].reverse().map((deployment) => `<div class="timeline"><strong>${escapeHtml(deployment.title)}</strong> — ${escapeHtml(deployment.status)}, started ${time(deployment.startedAtMs)}<ol>${deployment.events.map((event) => `<li><span class="kind">+${(event.atMs / 1000).toFixed(1)} s</span> <span class="kind">${escapeHtml(event.kind)}</span> ${escapeHtml(event.source)}: ${escapeHtml(event.message)}</li>`).join('')}</ol></div>`).join('') || '<p>No deployments.</p>';
}

async function refreshDeadLetters() {
  const listing = await api('/api/dead-letters');
  $('#dlq-badge').textContent = listing.total ? String(listing.total) : '';
  $('#dlq-summary').textContent = `${listing.total} dead letter(s) (${listing.copies} DLQ messages)`;
  $('#dlq-reasons tbody').innerHTML = listing.reasons.map((reason) => `<tr><td>${escapeHtml(reason.reason)}</td><td>${reason.count}</td><td>${escapeHtml(Object.keys(reason.types).join(', '))}</td><td>${escapeHtml(Object.keys(reason.workerVersions).join(', '))}</td><td>${escapeHtml(reason.oldestFailedAt || '-')}</td><td>${escapeHtml(reason.sampleError)}</td><td><button data-replay-reason="${escapeHtml(reason.reason)}">replay…</button></td></tr>`).join('');
  $('#dlq-messages tbody').innerHTML = listing.messages.map((letter) => `<tr class="clickable" data-message-id="${escapeHtml(letter.messageId)}"><td>${escapeHtml(letter.messageId)}</td><td>${escapeHtml(letter.reason)}</td><td>${escapeHtml(letter.type || '-')}</td><td>${escapeHtml(letter.resourceId || '-')}</td><td>${escapeHtml(letter.failedAt || '-')}</td><td>${escapeHtml(letter.error)}</td></tr>`).join('');
}

async function showDeadLetter(messageId) {
  const letter = await api(`/api/dead-letters/${encodeURIComponent(messageId)}`);
  $('#dlq-detail').hidden = false;
  $('#dlq-detail-id').textContent = messageId;
  $('#dlq-detail-json').textContent = JSON.stringify(letter, null, 2);
}

/** A replay is two steps: the dry run's decisions are shown, and only a confirmation sends anything. */
async function planReplay(reason) {
  const plan = await api('/api/dead-letters/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reasons: [reason], dryRun: true }) });
  // The confirmation replays exactly the messages shown here, not whatever carries the reason by then.
  state.replay = { reason, messageIds: plan.outcomes.map((o) => o.messageId) };
  $('#replay-confirm').disabled = state.replay.messageIds.length === 0;
  $('#replay').hidden = false;
  $('#replay-what').textContent = `reason ${reason} (dry run)`;
  $('#replay-result').textContent = '';
  $('#replay-plan tbody').innerHTML = plan.outcomes.map((o) => `<tr><td>${escapeHtml(o.messageId)}</td><td>${escapeHtml(o.reason)}</td><td>${escapeHtml(o.type || '-')}</td><td>${escapeHtml(o.decision)}</td><td>${escapeHtml(o.error || o.detail || '')}</td></tr>`).join('');
}

async function confirmReplay() {
  const planned = state.replay;
  if (!planned) return;
  state.replay = undefined;
  $('#replay-confirm').disabled = true;
  const report = await api('/api/dead-letters/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messageIds: planned.messageIds, dryRun: false, confirm: true }) });
  $('#replay-result').textContent = `replayed ${report.replayed} of ${report.selected}; skipped ${JSON.stringify(report.skipped)}; failed ${report.failed}`;
  await refreshDeadLetters();
}

function selectTab(tab) {
  state.tab = tab;
  for (const button of document.querySelectorAll('nav button')) button.classList.toggle('active', button.dataset.tab === tab);
  for (const section of document.querySelectorAll('.tab')) section.classList.toggle('active', section.id === tab);
  void refreshTab();
}

async function refreshTab() {
  if (state.tab === 'dashboard') await refreshDashboard();
  if (state.tab === 'alarms') await refreshAlarms();
  if (state.tab === 'deployments') await refreshDeployments();
  if (state.tab === 'dead-letters') await refreshDeadLetters();
  if (state.tab === 'traces') await refreshTraces();
}

async function tick() {
  try {
    await refreshTab();
    if (state.tab !== 'alarms') await refreshAlarms();
    $('#live').classList.remove('stale');
  } catch (error) {
    $('#live').classList.add('stale');
    $('#live').title = String(error);
  }
}

async function start() {
  const { stackName, dashboards } = await api('/api/dashboards');
  state.dashboards = dashboards;
  $('#stack-name').textContent = stackName;
  const dashboard = dashboards[0];
  if (!dashboard) $('#dashboard-note').textContent = 'The stack defines no CloudWatch dashboard.';
  else if (!dashboard.body) $('#dashboard-note').textContent = `Dashboard ${dashboard.name} could not be resolved locally: ${dashboard.unresolved}`;
  else buildGrid(dashboard.body);
  for (const button of document.querySelectorAll('nav button')) button.addEventListener('click', () => selectTab(button.dataset.tab));
  $('#range').addEventListener('change', () => void refreshDashboard());
  $('#period').addEventListener('change', () => void refreshDashboard());
  $('#dlq-refresh').addEventListener('click', () => void refreshDeadLetters());
  $('#dlq-messages').addEventListener('click', (event) => {
    const row = event.target.closest('[data-message-id]');
    if (row) void showDeadLetter(row.dataset.messageId);
  });
  $('#dlq-reasons').addEventListener('click', (event) => {
    const button = event.target.closest('[data-replay-reason]');
    if (button) void planReplay(button.dataset.replayReason);
  });
  $('#replay-confirm').addEventListener('click', () => void confirmReplay());
  $('#trace-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('#trace-key').value.trim();
    if (key) void showTrace(key);
  });
  $('#trace-jobs').addEventListener('click', (event) => {
    const item = event.target.closest('[data-job-id]');
    if (item) void showTrace(item.dataset.jobId);
  });
  $('#replay-cancel').addEventListener('click', () => { state.replay = undefined; $('#replay').hidden = true; });
  await tick();
  setInterval(() => void tick(), REFRESH_MS);
}

void start();
