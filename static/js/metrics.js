/* The Metrics tab: one Chart.js line chart (a classic script, global Chart) per metric the
 * selected node reported in the run shown, drawn again as points come. */
import { $, h, muted } from './dom.js';
import { runAndNode } from './outputs.js';
import { nodeStatus } from './runstate.js';

const chartOptions = () => ({
  animation: false,
  parsing: false,
  // steps are whole numbers (epochs): no tick at 1.2 or 0.94
  scales: { x: { type: 'linear', title: { display: true, text: 'step' }, ticks: { precision: 0 } } },
  plugins: { legend: { display: false } },
});

/** view: {run(), node(), metrics(nodeId)}; book: the statuses. */
export function metricsTab(view, book) {
  const charts = [];
  function show() {
    const panel = $('#tab-metrics');
    for (const c of charts.splice(0)) c.destroy();
    const sel = runAndNode(panel, view);
    if (!sel) return;
    const series = view.metrics(sel.node);
    const names = Object.keys(series);
    if (!names.length) {
      const yet = book.isActive(nodeStatus(sel.run, sel.node)) ? ' yet' : '';
      panel.replaceChildren(muted(`${sel.node} reported no metrics${yet}.`));
      return;
    }
    panel.replaceChildren();
    for (const name of names) {
      const canvas = h('canvas', { 'aria-label': `${name} by step`, 'data-metric': name });
      panel.append(h('h4', {}, name), h('div', { class: 'chart' }, canvas));
      const data = { datasets: [{ label: name, data: series[name], borderColor: '#0969da', pointRadius: 2 }] };
      charts.push(new Chart(canvas, { type: 'line', data, options: chartOptions() }));
    }
  }
  return { show };
}
