/* An overlay of lines on one Chart.js chart (a classic script, global Chart): a trial's or a
 * run's curve each, with a legend naming them. Shown again in place as data comes, keeping the
 * lines a reader hid by clicking the legend; figures spread over two decades on a log axis. */
import { logTick, yScaleType } from './scale.js';

/** series: [{label, points: [[x, y], ...], colour, width, marked?: an x drawn as a diamond}]; logWhenSpread: a loss or an error
 * (charts/scale.js), drawn on a log axis when its figures span two decades */
export function lineChart(canvas, { xTitle = 'step', yTitle = '', logWhenSpread = false } = {}) {
  const chart = new Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options: {
      animation: false,
      parsing: false,
      maintainAspectRatio: false,
      // room for the last epoch's marker (a diamond of radius 6) at the plot's right and top edges
      layout: { padding: { right: 8, top: 8 } },
      interaction: { mode: 'nearest', intersect: false },
      scales: {
        x: { type: 'linear', title: { display: true, text: xTitle }, ticks: { precision: 0 } },
        y: { title: { display: Boolean(yTitle), text: yTitle } },
      },
      plugins: {
        // the legend in the order given (a dataset's `order` only says which line is drawn on top)
        legend: { display: true, position: 'bottom', labels: { boxWidth: 12, sort: (a, b) => a.datasetIndex - b.datasetIndex },
          // a line hidden or shown again: Chart.js's own toggle, then the axis for what is shown
          onClick(e, item, legend) { Chart.defaults.plugins.legend.onClick.call(this, e, item, legend); rescale(); chart.update('none'); } },
      },
    },
  });
  function show(series) {
    const hidden = new Set(chart.data.datasets.filter((d, i) => !chart.isDatasetVisible(i)).map((d) => d.label));
    chart.data.datasets = series.map((s) => ({
      label: s.label,
      data: s.points.map(([x, y]) => ({ x, y })),
      borderColor: s.colour,
      backgroundColor: s.colour,
      borderWidth: s.width || 2,
      pointRadius: s.points.map(([x]) => (x === s.marked ? 6 : s.points.length > 60 ? 0 : 2)),
      pointStyle: s.points.map(([x]) => (x === s.marked ? 'rectRot' : 'circle')),
      hidden: hidden.has(s.label),
      clip: 8, // a marker on the plot's edge is drawn whole, not cut in half
      // a shorter line over a longer one: where runs agree, the one that stopped early stays seen
      order: s.points.length,
    }));
    rescale();
    chart.update('none');
  }
  // the y axis for the lines shown: log when they span two decades (charts/scale.js)
  function rescale() {
    const y = chart.options.scales.y;
    y.type = logWhenSpread
      ? yScaleType(chart.data.datasets.map((d, i) => ({ points: d.data.map((p) => [p.x, p.y]), hidden: !chart.isDatasetVisible(i) })))
      : 'linear';
    const log = y.type === 'logarithmic';
    y.title = { display: Boolean(yTitle) || log, text: [yTitle, log ? 'log scale' : ''].filter(Boolean).join(' · ') };
    y.ticks.callback = log ? logTick : Chart.Ticks.formatters.numeric;
  }
  return { chart, show };
}
