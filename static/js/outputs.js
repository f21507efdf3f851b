/* The tabs about the selected node in the run shown: Outputs + logs (files to download, the log
 * followed as it grows; "Register model" for a trained model) and Visualize (an htmx fragment from the server). */
import { $, h, muted } from './dom.js';
import { api, errorOf, paths } from './api.js';
import { LOG_TAIL_BYTES, bytes, keepTail, settleReturns, tailStart, urlPath } from './format.js';
import { statusLabel } from './statusbook.js';
import { nodeStatus } from './runstate.js';
import { registerButton } from './registerdialog.js';
import { ranWithRows } from './ranwith.js';

/**
 * The run and node a tab is about, or null after saying in the panel what is missing.
 * view: {run(), node()}: the run shown and the node selected alone.
 */
export function runAndNode(panel, view) {
  const run = view.run();
  const node = view.node();
  if (!run) { panel.replaceChildren(muted('Submit the pipeline, or pick a run in the Runs tab.')); return null; }
  if (!node) { panel.replaceChildren(muted(`Run #${run.id}: select a module on the canvas.`)); return null; }
  // the module as the canvas names it ("Train PyTorch Model"), not its id
  const label = node.attr('label/text') || node.id;
  if (!nodeStatus(run, node.id)) { panel.replaceChildren(muted(`${label} is not part of run #${run.id}.`)); return null; }
  return { run, node: node.id, label };
}

const download = (href, text) => h('a', { href, download: '' }, text);

/** "Parameters in run #N": what the module ran with; open when the canvas holds other values now. */
function ranWith(runId, rows, settings) {
  const changed = rows.filter((r) => r.now !== null).length;
  const cells = rows.map((r) => h('tr', { 'data-param': r.name, class: r.now !== null ? 'changed' : null },
    h('th', { scope: 'row' }, r.label), h('td', {}, r.value, r.now !== null ? h('span', { class: 'now' }, ` (now ${r.now})`) : null)));
  const layout = settings && settings.node_count ? h('p', { class: 'muted' },
    `Run settings: ${settings.node_count} node(s) × ${settings.process_count_per_node || 1} process(es)`) : null;
  return h('details', { class: 'ran-with', id: 'ran-with', open: changed > 0 },
    h('summary', {}, `Parameters in run #${runId}`, changed ? ` · ${changed} changed on the canvas since` : ''),
    h('table', {}, h('tbody', {}, cells)), layout);
}

/** "Attempts": a node whose worker was lost ran again (Max retries): which worker each earlier
 * attempt ran on, when it was last heard of, why it ended, and the time it cost; null for one attempt. */
export function attemptsList(data) {
  const lost = data.attempts || [];
  if (!lost.length) return null;
  const at = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '?');
  const cost = (a) => (a.started_at && a.retried_at
    ? `, ${Math.round((Date.parse(a.retried_at) - Date.parse(a.started_at)) / 1000)} s after it started` : '');
  const items = lost.map((a) => h('li', { 'data-attempt': a.attempt },
    h('strong', {}, `Attempt ${a.attempt}`), ` on ${a.worker || 'a worker'}: lost (last heard of at ${at(a.lost_at)}); `,
    `back in the queue at ${at(a.retried_at)}${cost(a)}`, h('div', { class: 'muted attempt-reason' }, a.reason)));
  items.push(h('li', { 'data-attempt': data.attempt }, h('strong', {}, `Attempt ${data.attempt}`),
    data.worker ? ` on ${data.worker}` : '', `: ${statusLabel(data.status)}`));
  return h('div', { class: 'attempts', id: 'attempts' }, h('h4', {}, 'Attempts'), h('ol', { class: 'plain' }, items));
}

/** "Trained on": the device of each process (a GPU's name and memory, or the CPU), as the training recorded it. */
export function devicesLine(devices) {
  if (!devices || !devices.length) return null;
  const name = (d) => (d.device === 'cuda' ? `${d.gpu} (${d.gpu_memory_gib} GiB)` : 'CPU');
  const items = devices.map((d) => h('li', { title: d.text || '' },
    devices.length > 1 ? `rank ${d.rank}: ${name(d)} on ${d.worker}` : `${name(d)} on ${d.worker}`));
  return h('div', { class: 'ran-on', id: 'ran-on' }, h('h4', {}, 'Trained on'), h('ul', { class: 'plain' }, items));
}

/** The Outputs + logs tab. view: {run(), node(), tab()}; book: the statuses; moduleOf(node): its
 * module; datasets: the user's (id -> {name}), to name a Dataset module's choice. */
export function outputsTab(view, book, moduleOf, datasets) {
  let logTimer = null;
  const chosenLog = new Map(); // `${run}/${node}` -> the log file the user chose: kept when the tab is drawn again

  /** The log tail of `base`: the select of log files, the text, the download links. */
  function follow(sel, base, logs) {
    const select = h('select', { id: 'log-file', 'aria-label': 'Log file' }, logs.map((name) => h('option', { value: name }, name)));
    const pre = h('pre', { class: 'log', id: 'log-text', tabindex: '0' });
    const logLink = (name) => h('li', {}, download(`${base}/files/logs/${urlPath(name)}`, `download ${name}`));
    const links = h('ul', { class: 'files' }, logs.map(logLink));
    const none = logs.length ? null : h('p', { class: 'muted', id: 'no-log' }, 'No log yet.');
    const note = h('p', { class: 'muted log-note', id: 'log-note', hidden: true });
    const key = `${sel.run.id}/${sel.node}`;
    const tail = { offset: 0, file: logs.includes(chosenLog.get(key)) ? chosenLog.get(key) : logs[0], first: true };
    if (tail.file) select.value = tail.file;
    const shown = () => pre.isConnected && view.tab() === 'outputs' && view.node() && view.node().id === sel.node;

    async function pump() {
      const q = new URLSearchParams({ offset: tail.offset });
      if (tail.file) q.set('file', tail.file);
      const r = await api('GET', `${base}/log?${q}`);
      if (!r.ok || !shown()) return;
      if (tail.first && tailStart(r.data.size) > tail.offset) { // a long log: show its end
        tail.first = false;
        tail.offset = tailStart(r.data.size);
        note.hidden = false;
        note.textContent = `A long log (${(r.data.size / 1048576).toFixed(1)} MB): shown from its last ${LOG_TAIL_BYTES / 1024} KB, and as it grows; download it below for the whole.`;
        logTimer = setTimeout(pump, 0);
        return;
      }
      tail.first = false;
      if (r.data.text) {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = keepTail(settleReturns(pre.textContent + r.data.text));
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      tail.offset = r.data.next_offset;
      if (!tail.file && r.data.files.length) tail.file = r.data.file;
      // a distributed node's ranks start their logs one after the other: list each as it comes
      const listed = new Set(Array.from(select.options, (o) => o.value));
      const fresh = r.data.files.filter((name) => !listed.has(name));
      if (fresh.length) { // in the server's order: rank 0's first
        select.replaceChildren(...r.data.files.map((name) => h('option', { value: name }, name)));
        links.replaceChildren(...r.data.files.map(logLink));
      }
      if (fresh.length && !select.isConnected) { if (none) none.remove(); pre.before(select); }
      if (fresh.length) select.value = tail.file;
      const live = book.isActive(r.data.status);
      if (live || r.data.next_offset < r.data.size) logTimer = setTimeout(pump, live ? 1000 : 50);
    }
    select.addEventListener('change', () => {
      chosenLog.set(key, select.value);
      Object.assign(tail, { offset: 0, file: select.value, first: true });
      pre.textContent = '';
      note.hidden = true;
      clearTimeout(logTimer);
      pump();
    });
    return { parts: [h('h4', {}, 'Logs'), none || select, note, pre, links], pump };
  }

  async function show() {
    const panel = $('#tab-outputs');
    const sel = runAndNode(panel, view);
    if (!sel) return;
    const base = paths.node(sel.run.id, sel.node);
    const r = await api('GET', `${base}/files`);
    if (!r.ok) { panel.textContent = errorOf(r, `Cannot list the files (${r.status}).`); return; }
    const parts = [h('h3', { 'data-node': sel.node }, `${sel.label} in run #${sel.run.id}: ${statusLabel(r.data.status)}`),
      registerButton(sel.run.id, view.node(), r.data.status, moduleOf(view.node()), Object.keys(r.data.outputs || {}))].filter(Boolean);
    const cancelled = r.data.status === 'cancelled'; // the user's own doing: said, not alarmed
    if (r.data.error) parts.push(h('div', { class: cancelled ? 'node-error cancelled' : 'node-error', role: cancelled ? 'status' : 'alert' }, h('strong', {}, cancelled ? 'Cancelled' : 'Error'), h('pre', {}, r.data.error)));
    if (r.data.parameters) {
      const node = view.node();
      const rows = ranWithRows(moduleOf(node), r.data.parameters, node ? node.getData() : null, datasets);
      if (rows.length) parts.push(ranWith(sel.run.id, rows, r.data.run_settings));
    }
    const attempts = attemptsList(r.data);
    if (attempts) parts.push(attempts);
    const ranOn = devicesLine(r.data.devices);
    if (ranOn) parts.push(ranOn);
    for (const [port, files] of Object.entries(r.data.outputs)) {
      const items = files.map((f) => h('li', {}, download(`${base}/files/${encodeURIComponent(port)}/${urlPath(f.path)}`, f.path), ` (${bytes(f.size)})`));
      parts.push(h('h4', {}, `Output: ${port}`), h('ul', { class: 'files', 'data-port': port }, items.length ? items : h('li', { class: 'muted' }, 'no files')));
    }
    const logs = follow(sel, base, r.data.logs.map((f) => f.path));
    panel.replaceChildren(...parts, ...logs.parts);
    logs.pump();
  }

  return { show, stop: () => clearTimeout(logTimer) };
}

/** The Visualize tab: the server draws it. */
export function showVisualize(view) {
  const sel = runAndNode($('#tab-visualize'), view);
  if (sel) htmx.ajax('GET', paths.visualize(sel.run.id, sel.node), { target: '#tab-visualize', swap: 'innerHTML' });
}
