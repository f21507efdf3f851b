/* The sweep page (templates/pipelines/sweep.html): the sweep read from GET /api/sweeps/<id>,
 * again when its websocket says "changed" (at most once a second) and every 3 s while it runs
 * (the in-memory channel layer of the embedded app cannot cross from a worker process); its
 * trial table, parallel coordinates and curves; cancel, delete, apply the best values, compare trials. */
import { api, errorOf } from './api.js';
import { lineChart } from './charts/lines.js';
import { fallsByFactors } from './charts/scale.js';
import { drawParallel } from './charts/parallel.js';
import { $, h, withCode } from './dom.js';
import { statusLabel } from './statusbook.js';
import { trialTable } from './sweeptable.js';
import { compareHref, curveSeries, summaryText, sweepFinished } from './trials.js';

const POLL_MS = 3000;
const THROTTLE_MS = 1000;
const boot = JSON.parse($('#sweep-boot').textContent);
const url = `/api/sweeps/${boot.id}`;
let sweep = null;

const table = trialTable($('#trials'), (runIds) => {
  const ok = runIds.length >= 2 && runIds.length <= boot.max_compare;
  $('#compare-trials').disabled = !ok;
  $('#compare-hint').textContent = runIds.length > boot.max_compare
    ? `at most ${boot.max_compare} trials can be compared at once` : `${runIds.length} ticked: tick 2 to ${boot.max_compare} trials`;
});
let curves = null;

function say(text, bad = false, ...more) {
  const el = $('#action-result');
  el.className = bad ? 'error' : '';
  el.replaceChildren(text, ...more);
}

/** The parallel coordinates of the trials that are over (a running trial's metric still moves). */
function drawFinished() {
  const over = new Set(boot.statuses.trial_finished || []);
  drawParallel($('#parallel'), { ...sweep, trials: (sweep.trials || []).filter((t) => over.has(t.status)) });
}

function show(data) {
  sweep = data;
  const over = sweepFinished(sweep, boot.statuses);
  const badge = $('#sweep-status');
  badge.textContent = statusLabel(sweep.status);
  badge.dataset.status = sweep.status;
  $('#sweep-message').replaceChildren(...withCode(sweep.message));
  $('#sweep-facts').textContent = summaryText(sweep, boot.statuses.trial_finished || []);
  $('#cancel-sweep').disabled = over;
  $('#delete-sweep').disabled = !over;
  $('#delete-sweep').title = over ? "Delete the sweep and its study; its trials' runs stay in the pipeline's runs"
    : 'A running sweep is cancelled first';
  if (over && $('#action-result').textContent.startsWith('Cancelling')) say('');
  $('#apply-best').disabled = sweep.best_trial === null || sweep.best_trial === undefined;
  $('#no-trials').hidden = (sweep.trials || []).length > 0;
  table.show(sweep);
  const metric = (sweep.primary_metric && sweep.primary_metric.name) || 'primary metric';
  $('#parallel-title').textContent = `Parameters and ${metric}`;
  $('#curves-title').textContent = `${metric} per epoch`;
  drawFinished();
  if (!curves) curves = lineChart($('#curves'), { xTitle: 'epoch', yTitle: metric, logWhenSpread: fallsByFactors(metric) });
  curves.show(curveSeries(sweep));
  $('#curves-note').hidden = !(sweep.trials || []).some((t) => t.kept_step);
  document.documentElement.dataset.sweepStatus = sweep.status;
  document.documentElement.dataset.sweepLoaded = String(Number(document.documentElement.dataset.sweepLoaded || 0) + 1);
}

// ---------------------------------------------------------------- reading, throttled

let busy = false;
let again = false;
let last = 0;
let timer = null;

async function refresh() {
  if (busy) { again = true; return; }
  busy = true;
  const answer = await api('GET', url);
  busy = false;
  last = Date.now();
  if (answer.ok) show(answer.data);
  else $('#sweep-message').textContent = errorOf(answer, `The sweep could not be read (HTTP ${answer.status}); retrying.`);
  if (again) { again = false; soon(); }
}

/** Read the sweep again, at most once a second however often it is asked. */
function soon() {
  if (timer) return;
  timer = setTimeout(() => { timer = null; refresh(); }, Math.max(0, THROTTLE_MS - (Date.now() - last)));
}

const finished = () => sweep !== null && sweepFinished(sweep, boot.statuses);

function listen() {
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/sweeps/${boot.id}/`);
  ws.onmessage = (e) => {
    let msg = {};
    try { msg = JSON.parse(e.data); } catch (err) { msg = {}; }
    if (msg.type === 'changed') soon();
  };
  // the poll goes on meanwhile; a sweep that is over has nothing more to say
  ws.onclose = (e) => { if (e.code !== 4404 && !finished()) setTimeout(listen, POLL_MS); };
}

// ---------------------------------------------------------------- actions

$('#cancel-sweep').addEventListener('click', async () => {
  $('#cancel-sweep').disabled = true;
  const answer = await api('POST', `${url}/cancel`);
  if (answer.ok) {
    if (!sweepFinished(answer.data, boot.statuses)) say('Cancelling: queued trials will not start, running ones stop at their next safe point.');
    show(answer.data);
  }
  else { $('#cancel-sweep').disabled = false; say(errorOf(answer, `The sweep could not be cancelled (HTTP ${answer.status}).`), true); }
});

$('#delete-sweep').addEventListener('click', async () => {
  if (!window.confirm(`Delete the sweep "${sweep.name}"? Its trials' runs stay in the pipeline's runs.`)) return;
  const answer = await api('DELETE', url);
  if (answer.ok) location.href = '/sweeps/';
  else say(errorOf(answer, `The sweep could not be deleted (HTTP ${answer.status}).`), true);
});

$('#apply-best').addEventListener('click', async () => {
  const answer = await api('POST', `${url}/apply-best`);
  if (!answer.ok) { say(errorOf(answer, `The best values could not be applied (HTTP ${answer.status}).`), true); return; }
  const p = answer.data.pipeline;
  say(`Trial ${sweep.best_trial}'s values are now the defaults of ${p.name}'s parameters (revision ${p.revision}). `, false,
    h('a', { href: `/pipelines/${p.id}/`, id: 'applied-link' }, `Open ${p.name}`));
});

$('#compare-trials').addEventListener('click', () => { location.href = compareHref(table.picked()); });

let resizing = null;
window.addEventListener('resize', () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => { if (sweep) drawFinished(); }, 150);
});

setInterval(() => { if (!finished()) soon(); }, POLL_MS);
listen();
refresh();
