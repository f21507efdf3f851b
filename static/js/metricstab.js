/* The Metrics tab: the metrics the selected node reported in the run shown, as Chart.js line
 * charts (charts/lines.js), drawn again as points come. The training and validation figures of
 * one quantity share a chart (charts/groups.js): loss with loss, accuracy with accuracy. */
import { $, h, muted } from './dom.js';
import { chartGroups } from './charts/groups.js';
import { fallsByFactors } from './charts/scale.js';
import { runColour } from './charts/colours.js';
import { lineChart } from './charts/lines.js';
import { runAndNode } from './outputs.js';
import { nodeStatus } from './runstate.js';
import { moduleOf } from './rules.js';

/** What the module's metric steps count ("epoch" for Train PyTorch Model), the charts' x axis. */
const stepName = (modules, node) => ((moduleOf(modules, node.getData()) || {}).metric_step || 'step');

/** view: {run(), node(), metrics(nodeId)}; book: the statuses; modules: kind -> module. */
export function metricsTab(view, book, modules = new Map()) {
  const charts = [];
  function show() {
    const panel = $('#tab-metrics');
    for (const c of charts.splice(0)) c.chart.destroy();
    const sel = runAndNode(panel, view);
    if (!sel) return;
    const series = view.metrics(sel.node);
    const groups = chartGroups(Object.keys(series));
    if (!groups.length) {
      const yet = book.isActive(nodeStatus(sel.run, sel.node)) ? ' yet' : '';
      panel.replaceChildren(muted(`${sel.label} reported no metrics${yet}.`));
      return;
    }
    panel.replaceChildren();
    const xTitle = stepName(modules, view.node());
    for (const group of groups) {
      // data-metrics: the names drawn on it (a test or a script finds a metric's chart by `~=`)
      const canvas = h('canvas', { 'aria-label': `${group.names.join(' and ')} by ${xTitle}`, 'data-metrics': group.names.join(' ') });
      panel.append(h('h4', {}, group.title), h('div', { class: 'chart' }, canvas));
      const chart = lineChart(canvas, { xTitle, logWhenSpread: fallsByFactors(group.quantity) });
      chart.show(group.names.map((name, i) => ({ label: name, points: series[name].map((p) => [p.x, p.y]), colour: runColour(i) })));
      charts.push(chart);
    }
  }
  return { show };
}
