// The console's Traces tab: a job's, a trace's or an idempotency key's spans as a tree with timing
// bars, laid out by the server as `ballast trace` lays them out (shared/operations/trace-tree.ts),
// and the recent jobs of the local span store. Loaded before console.js, whose helpers (`$`, `api`,
// `escapeHtml`, `time`, `state`) these functions use when called.
'use strict';

/** `0.42 ms`, `12.3 ms`, `1.25 s`: as `ballast trace` prints them. */
function formatMs(ms) {
  const abs = Math.abs(ms);
  if (abs < 10) return `${ms.toFixed(2)} ms`;
  if (abs < 1000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(abs < 10000 ? 2 : 1)} s`;
}

async function refreshRecentJobs() {
  const { jobs, traceCount } = await api('/api/traces/recent?limit=50');
  $('#trace-count').textContent = `(${traceCount} traces held)`;
  $('#trace-jobs').innerHTML = jobs.length === 0 ? '<li class="note">No job has spans yet.</li>' : jobs.map((job) => `<li class="clickable${job.error ? ' error' : ''}" data-job-id="${escapeHtml(job.jobId)}" title="trace ${escapeHtml(job.traceId)}"><span class="job-id">${escapeHtml(job.jobId)}</span> <span class="note">${escapeHtml(job.jobType || '')}${job.outcome ? ` · ${escapeHtml(job.outcome)}` : ''} · ${time(job.startEpochMs)}</span></li>`).join('');
}

/** One trace: a row per span, indented under its parent, with a bar placed on the trace's timeline. */
function traceHtml(trace) {
  const total = Math.max(trace.durationMs, 0.001);
  const rows = trace.rows.map((row) => {
    const left = (row.offsetMs / total) * 100;
    const width = Math.max((row.durationMs / total) * 100, 0.3);
    const notes = [
      row.error !== undefined ? `<span class="span-error">ERROR${row.error ? `: ${escapeHtml(row.error)}` : ''}</span>` : '',
      row.orphan ? '<span class="note">(parent not collected)</span>' : '',
      row.serviceChanged ? `<span class="service">${escapeHtml(row.service)}</span>` : '',
    ].join(' ');
    return `<div class="span-row${row.error !== undefined ? ' error' : ''}${row.read ? ' read' : ''}" data-span-id="${escapeHtml(row.spanId)}" data-name="${escapeHtml(row.name)}" data-depth="${row.depth}">
      <div class="span-name" style="padding-left:${row.depth * 16 + 4}px" title="${escapeHtml(row.name)} · ${escapeHtml(row.spanId)}"><strong>${row.error !== undefined ? '✗ ' : ''}${escapeHtml(row.label)}</strong> ${escapeHtml(row.details.join(', '))} ${notes}</div>
      <div class="span-track"><div class="span-bar" style="left:${left.toFixed(3)}%;width:${Math.min(width, 100 - left).toFixed(3)}%"></div></div>
      <div class="span-time">+${formatMs(row.offsetMs)} · ${formatMs(row.durationMs)}</div>
    </div>`;
  }).join('');
  const jobs = trace.jobIds.length ? ` · job ${escapeHtml(trace.jobIds.join(', '))}` : '';
  return `<div class="trace" data-trace-id="${escapeHtml(trace.traceId)}"><h3>trace ${escapeHtml(trace.traceId)}${jobs} <span class="note">${trace.spanCount} spans${trace.readCount ? `, ${trace.readCount} reads` : ''} · ${formatMs(trace.durationMs)} · ${time(trace.startEpochMs)}</span></h3>${rows}</div>`;
}

async function showTrace(key) {
  state.traceKey = key;
  $('#trace-key').value = key;
  const result = await api(`/api/traces?${new URLSearchParams({ key })}`);
  if (state.traceKey !== key) return;
  $('#trace-summary').textContent = result.traces.length === 0 ? `no trace of '${key}' (yet)` : `'${key}' is a ${result.matchedBy.join(' and ')}: ${result.traces.length} trace(s)`;
  $('#trace-view').innerHTML = result.traces.map(traceHtml).join('') || '<p class="note">No spans for this key yet: they arrive when an invocation ends.</p>';
}

async function refreshTraces() {
  await refreshRecentJobs();
  if (state.traceKey) await showTrace(state.traceKey);
}
