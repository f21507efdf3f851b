/* The comparison page (templates/pipelines/compare.html), drawn from the data of
 * server's comparison (compare.py of the sweeps package) given in the page: the runs, one colour each; the parameters
 * and run settings that differ; the final metrics side by side, the best of each row marked;
 * every metric's curves overlaid on one chart per metric. */
import { lineChart } from './charts/lines.js';
import { fallsByFactors } from './charts/scale.js';
import { runColour } from './charts/colours.js';
import { $, h } from './dom.js';
import { when } from './format.js';
import { statusLabel } from './statusbook.js';
import { bestIndices, formatValue } from './values.js';

const data = JSON.parse($('#compare-boot').textContent);
const runs = data.runs;

/** "#12 digits": how the legends name a run (a trial's run is named after its trial already). */
const runLabel = (run) => `#${run.id} ${run.name}`;

const swatch = (i) => h('span', { class: 'swatch', style: `background:${runColour(i)}`, 'aria-hidden': 'true' });

function runHead(run, i) {
  return h('th', { class: 'num', 'data-run': run.id, scope: 'col' }, swatch(i), `#${run.id}`,
    run.trial ? h('span', { class: 'muted' }, ` trial ${run.trial.number}`) : null);
}

function runsTable() {
  $('#compared-runs tbody').replaceChildren(...runs.map((run, i) => h('tr', { 'data-run': run.id },
    h('td', {}, swatch(i), run.pipeline ? h('a', { href: `/pipelines/${run.pipeline}/?run=${run.id}` }, `Run #${run.id}`) : `Run #${run.id}`),
    h('td', {}, run.name),
    h('td', { class: `status-${run.shown_status || run.status}` }, statusLabel(run.shown_status || run.status)),
    h('td', {}, run.trial ? h('a', { href: `/sweeps/${run.trial.sweep}/` }, `trial ${run.trial.number} of sweep ${run.trial.sweep}`) : '—'),
    h('td', {}, when(run.submitted_at)))));
}

/** A table of rows {label, values[per run], notes?[per run]}; `best(row)` gives the cells to mark. */
function sideBySide(table, title, rows, best = () => []) {
  const head = h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, title), runs.map(runHead)));
  const body = h('tbody', {}, rows.map((row) => {
    const marked = new Set(best(row));
    return h('tr', { 'data-key': row.key || row.label },
      h('th', { scope: 'row' }, row.label),
      row.values.map((v, i) => h('td', {
        class: ['num', v === null || v === undefined ? 'absent' : '', marked.has(i) ? 'best' : ''].filter(Boolean).join(' '),
        'data-run': runs[i].id, title: marked.has(i) ? 'best' : null,
      }, formatValue(v), row.notes && row.notes[i] ? h('span', { class: 'muted' }, ` ${row.notes[i]}`) : null)));
  }));
  table.replaceChildren(head, body);
}

function differences() {
  $('#no-differences').hidden = data.differences.length > 0;
  $('#differences').hidden = !data.differences.length;
  sideBySide($('#differences'), 'Parameter or setting', data.differences);
}

function finals() {
  $('#no-metrics').hidden = data.metrics.length > 0;
  $('#final-metrics').hidden = !data.metrics.length;
  // where a node kept another epoch's model than its last (Train PyTorch Model: lowest validation
  // loss), that epoch's value: what the sweep page ranks trials by, and what registering gives
  const rows = data.metrics.map((m) => ({
    key: m.label, label: m.label, goal: m.goal,
    values: m.final.map((v, i) => (m.kept && m.kept[i] !== null ? m.kept[i] : v)),
    notes: m.final.map((v, i) => (m.kept && m.kept[i] !== null ? `(${m.step || 'step'} ${m.kept_step[i]}, kept)` : '')),
  }));
  sideBySide($('#final-metrics'), 'Metric (at the kept epoch, else the last value)', rows, (row) => bestIndices(row.values, row.goal));
}

function curves() {
  const grid = $('#curves');
  grid.replaceChildren();
  for (const m of data.metrics) {
    const step = m.step || 'step'; // what a step counts: "epoch" for Train PyTorch Model
    const canvas = h('canvas', { 'aria-label': `${m.label} by ${step}, one line per run`, 'data-metric': m.label });
    // the legend takes a line per run: the chart grows with it, so that the plot keeps its height
    grid.append(h('div', { class: 'chart-card' }, h('h3', {}, m.label), h('div', { class: 'chart', style: `height: ${200 + 24 * runs.length}px` }, canvas)));
    // a diamond at the epoch whose model the run kept (as on the sweep page)
    const series = runs.map((run, i) => ({ label: runLabel(run), points: m.curves[i], colour: runColour(i), marked: m.kept_step ? m.kept_step[i] : null }))
      .filter((s) => s.points.length);
    lineChart(canvas, { xTitle: step, yTitle: m.name, logWhenSpread: fallsByFactors(m.name) }).show(series);
  }
  if (!data.metrics.length) grid.append(h('p', { class: 'muted' }, 'No curves: none of these runs reported a metric.'));
}

runsTable();
differences();
finals();
curves();
document.documentElement.dataset.compareReady = 'true';
