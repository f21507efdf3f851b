/* Runs: submitting the pipeline, the run shown on the canvas (its statuses painted on the nodes,
 * its banner, kept live by its socket), the Runs tab's list, and cancelling. */
import { $, $$, button, h, muted, withCode } from './dom.js';
import { api, errorOf, paths } from './api.js';
import { SILENT, arrange } from './canvas.js';
import { statusFit } from './cells.js';
import { statusLabel } from './statusbook.js';
import { duration, runSummary, when } from './format.js';
import { banner } from './messages.js';
import { clockOffset, nodeLines, noteProgress } from './progress.js';
import { EVENTS, addMetric, applyNodeEvent, askAfter, mergeRun, unknownRun } from './runstate.js';
import { watchRun } from './socket.js';
import { askRunValues } from './submitdialog.js';
import { formatNumber } from './values.js';

/** "learning_rate=0.01, epochs=2" of a run's frozen parameter values, or ''. */
/** "lr=0.03792, epochs=5": a run's parameter values, numbers to 4 significant digits (the run keeps them whole). */
export const valuesText = (values) => Object.entries(values || {})
  .map(([k, v]) => `${k}=${typeof v === 'number' ? formatNumber(v) : JSON.stringify(v)}`).join(', ');

/**
 * settle() saves the last edits first (false: they cannot be); problems: the problems view;
 * params(): the pipeline's parameters (Submit asks for their values when there are any);
 * hooks: {tabs(): redraw the run tabs, node(id): a node's status changed, metric(id): a point came}.
 */
export function runsView(canvas, book, pipelineId, { settle, problems, params, hooks }) {
  const { graph } = canvas;
  let run = null; // the run shown on the canvas: {id, status, nodes: {id: {status, duration...}}}
  let metrics = {}; // node -> metric name -> [{x, y}]
  let progress = {}; // node -> {step, steps, values}: what its status line shows while it runs
  let socket = null;
  let refreshTimer = null;
  let ticker = null;
  let skew = 0; // the server's clock ahead of the browser's (ms): a node's time so far is counted on the server's
  const serverNow = () => Date.now() + skew;

  const infoOf = (n) => (run && run.nodes ? run.nodes[n.id] : null);
  const isLive = (n) => { const info = infoOf(n); return !!info && info.status === book.running; };

  /** A node's status (its stripe, its status line; while it runs, its progress and time so far). */
  function paintNode(n, now) {
    const info = infoOf(n);
    const st = info ? info.status : null;
    const m = canvas.module(n) || {};
    const unit = m.metric_step || 'step';
    const total = (n.getData().parameters || {})[`${unit}s`]; // "epochs": the count asked for, until the module says
    const lines = nodeLines(info, isLive(n), progress[n.id], { unit, total: Number.isInteger(total) ? total : null, now });
    const grows = !!lines.progress !== !!n.attr('progress/text');
    n.attr({ stripe: { fill: book.colour(st) }, status: { text: statusFit(lines.status) }, progress: { text: statusFit(lines.progress, 10) },
      statusTip: { title: lines.title }, body: { 'data-status': st } }, SILENT);
    if (grows) arrange(n);
  }

  function paintStatuses() {
    const now = serverNow();
    graph.batchUpdate(() => { for (const n of graph.getNodes()) paintNode(n, now); }, SILENT);
    tickWhileRunning();
  }

  // a running node's time goes on: its line is drawn again every second while any runs
  function tickWhileRunning() {
    if (ticker || !graph.getNodes().some(isLive)) return;
    ticker = setInterval(() => {
      const live = graph.getNodes().filter(isLive);
      if (!live.length) { clearInterval(ticker); ticker = null; return; }
      const now = serverNow();
      graph.batchUpdate(() => live.forEach((n) => paintNode(n, now)), SILENT);
    }, 1000);
  }

  function showBanner(extra = '') {
    const el = $('#run-banner');
    if (!run) { el.hidden = true; return; }
    el.hidden = false;
    el.className = `run-banner status-${run.status}`;
    const trial = run.trial ? `trial ${run.trial.number} of sweep #${run.trial.sweep}${run.trial.best ? ', its best' : ''}` : '';
    const nameOf = (id) => { const n = graph.getCellById(id); const m = n && n.isNode() ? canvas.module(n) : null; return m ? `${m.label} (${id})` : id; };
    $('#run-summary').replaceChildren(...withCode(runSummary(run, book, [extra, trial, valuesText(run.parameters)].filter(Boolean).join(' · '), nameOf)));
    el.dataset.status = run.status;
    $('#cancel-run').hidden = book.isRunFinished(run.status);
    $('#delete-run').hidden = !book.isRunFinished(run.status);
  }

  function show(next) { run = next; paintStatuses(); showBanner(); }

  async function refresh() {
    if (!run) return;
    const sent = Date.now();
    const id = run.id;
    const r = await api('GET', paths.run(id));
    if (r.status === 404 && run && run.id === id) { forget(); banner(`Run #${id} is not there: it was deleted.`); return; }
    if (r.ok && r.data.now) skew = clockOffset(r.data.now, sent, Date.now());
    if (r.ok && run && r.data.id === run.id) show(mergeRun(run, r.data, book));
  }

  function refreshSoon(ms = 150) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, ms);
  }

  function onEvent(ev) {
    if (!run) return;
    if (applyNodeEvent(run, ev, book)) {
      paintStatuses();
      showBanner();
      const ask = askAfter(ev, book); // most events say all: no whole run is fetched after each
      if (ask) refreshSoon(ask === 'now' ? 150 : 2000);
      hooks.node(ev.node);
    } else if (ev.type === EVENTS.metric) {
      addMetric(metrics, ev);
      noteProgress(progress, ev);
      const n = graph.getCellById(ev.node);
      if (n && n.isNode()) paintNode(n, serverNow());
      hooks.metric(ev.node);
    } else if (ev.type === EVENTS.runFinished) {
      refresh().then(() => { list(); hooks.tabs(); });
      socket.close();
    } else if (ev.type === EVENTS.cancelRequested) {
      showBanner('cancelling…');
    }
  }

  function reopened(id) {
    refresh().then(() => {
      if (run && run.id === id) banner(`Reconnected to the server: run #${id} is shown as it is now (${run.status}).`, { kind: 'info', stays: true });
    });
  }

  async function view(id, known) {
    if (socket) socket.close();
    metrics = {};
    progress = {};
    run = known || unknownRun(id, book);
    const url = new URL(location.href);
    url.searchParams.set('run', id);
    window.history.replaceState(null, '', url);
    await refresh();
    if (socket) socket.close(); // another run was picked meanwhile
    if (run) socket = watchRun(run.id, { onEvent, onReopened: () => reopened(id), isOver: () => !!run && book.isRunFinished(run.status) });
    hooks.tabs();
    for (const tr of $$('#tab-runs tr[data-run], #tab-runs tr[data-values-of]')) tr.classList.toggle('current', Number(tr.dataset.run || tr.dataset.valuesOf) === id);
  }

  async function list() {
    const r = await api('GET', paths.runs(pipelineId));
    const panel = $('#tab-runs');
    if (!r.ok) return [];
    if (!r.data.runs.length) { panel.replaceChildren(muted('No runs yet.')); return []; }
    const head = h('thead', {}, h('tr', {}, h('th', {}, h('span', { class: 'visually-hidden' }, 'Compare')),
      ['Run', 'Status', 'Submitted', 'Duration'].map((t) => h('th', {}, t))));
    // a run's parameter values (and the sweep a trial belongs to) on a line of its own under it
    const rows = r.data.runs.flatMap((x) => {
      const cls = run && run.id === x.id ? 'current' : null;
      const main = h('tr', { 'data-run': x.id, class: cls },
        h('td', {}, h('input', { type: 'checkbox', class: 'pick', value: x.id, 'aria-label': `Compare run ${x.id}`, onchange: picked })),
        h('td', {}, button({ class: 'link', onclick: () => view(x.id) }, `#${x.id}`)),
        h('td', { class: `status-${x.shown_status || x.status}` }, statusLabel(x.shown_status || x.status)),
        h('td', {}, when(x.submitted_at)),
        h('td', {}, duration(x.duration)));
      const values = valuesText(x.parameters);
      if (!values && !x.trial) return [main];
      main.classList.add('has-values');
      return [main, h('tr', { 'data-values-of': x.id, class: `run-values-row${cls ? ` ${cls}` : ''}` }, h('td'), h('td', { colspan: 4, class: 'run-values' },
        x.trial ? h('a', { class: 'trial-mark', href: `/sweeps/${x.trial.sweep}/`, title: `Trial ${x.trial.number} of sweep #${x.trial.sweep}: open the sweep` },
          `sweep #${x.trial.sweep} · trial ${x.trial.number}`) : null,
        values ? h('span', { title: 'the values of the pipeline parameters in this run' }, values) : null))];
    });
    const compare = h('a', { class: 'button', id: 'compare-picked', href: '#', 'aria-disabled': 'true' }, 'Compare selected runs');
    panel.replaceChildren(h('table', { class: 'runs' }, head, h('tbody', {}, rows)),
      h('p', { class: 'compare-row' }, compare, h('span', { class: 'muted', id: 'runs-picked' }, ' tick 2 to 10 runs')));
    picked();
    return r.data.runs; // newest first
  }

  /** Compare selected runs: the comparison page of the runs ticked, once 2 to 10 are. */
  function picked() {
    const ids = $$('#tab-runs input.pick:checked').map((c) => c.value);
    const ok = ids.length >= 2 && ids.length <= 10;
    const link = $('#compare-picked');
    link.setAttribute('aria-disabled', String(!ok));
    link.href = ok ? `/runs/compare?runs=${ids.join(',')}` : '#';
    $('#runs-picked').textContent = ids.length ? ` ${ids.length} ticked` : ' tick 2 to 10 runs';
  }

  async function submit() {
    // aria-disabled, not disabled: a disabled button loses the focus, and a keyboard user who
    // pressed Enter on Submit would be sent back to the top of the page
    const btn = $('#submit');
    if (btn.getAttribute('aria-disabled') === 'true') return;
    btn.setAttribute('aria-disabled', 'true');
    try {
      if (!await settle()) return;
      const count = problems.list().length;
      // both refusals below go by themselves once the last problem is fixed (problems.set rechecks)
      const unfixed = () => problems.list().length > 0;
      if (count) { banner(`The pipeline cannot run: fix the ${count} problem(s) listed below the canvas first.`, { holds: unfixed }); return; }
      const declared = params();
      const send = (values) => api('POST', paths.runs(pipelineId), declared.length ? { parameters: values } : {});
      const r = declared.length ? await askRunValues(declared, send) : await send({});
      if (!r) return; // the dialog was closed
      if (!r.ok) {
        const listed = !!(r.data && r.data.problems);
        if (listed) problems.set(r.data.problems);
        banner(`Not submitted: ${errorOf(r, r.status)}`, { holds: listed ? unfixed : null });
        return;
      }
      banner('');
      await view(r.data.id, r.data);
      list();
    } finally {
      btn.removeAttribute('aria-disabled');
    }
  }

  async function cancel() {
    if (!run) return;
    const r = await api('POST', paths.cancel(run.id));
    if (r.ok) show(r.data); else banner(`Cannot cancel: ${errorOf(r, r.status)}`);
  }

  // a run that is over: gone from the list and the canvas; its folders once no other run reuses them
  async function remove() {
    if (!run || !window.confirm(`Delete run #${run.id}? Its outputs and logs are removed; an output that a later run reused stays with that run, and registered models stay.`)) return;
    const r = await api('DELETE', paths.run(run.id));
    if (!r.ok) { banner(`Cannot delete run #${run.id}: ${errorOf(r, r.status)}`); return; }
    forget();
    banner(`Run #${r.data.deleted} deleted.`, { kind: 'info' });
    list();
  }

  /** No run on the canvas (the one shown was deleted): no statuses, no banner, no ?run= */
  function forget() {
    if (socket) socket.close();
    socket = null;
    metrics = {};
    progress = {};
    const url = new URL(location.href);
    url.searchParams.delete('run');
    window.history.replaceState(null, '', url);
    show(null);
    hooks.tabs();
  }

  $('#submit').addEventListener('click', submit);
  $('#cancel-run').addEventListener('click', cancel);
  $('#delete-run').addEventListener('click', remove);
  return { view, list, run: () => run, metrics: (nodeId) => metrics[nodeId] || {} };
}
