/* An overlay of lines on one Chart.js chart (a classic script, global Chart): a trial's or a
 * run's curve each, with a legend naming them. Shown again in place as data comes, keeping the
 * lines a reader hid by clicking the legend. */

/** series: [{label, points: [[x, y], ...], colour, width}] */
export function lineChart(canvas, { xTitle = 'step', yTitle = '' } = {}) {
  const chart = new Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options: {
      animation: false,
      parsing: false,
      maintainAspectRatio: false,
      interaction: { mode: 'nearest', intersect: false },
      scales: {
        x: { type: 'linear', title: { display: true, text: xTitle }, ticks: { precision: 0 } },
        y: { title: { display: Boolean(yTitle), text: yTitle } },
      },
      plugins: {
        // the legend in the order given (a dataset's `order` only says which line is drawn on top)
        legend: { display: true, position: 'bottom', labels: { boxWidth: 12, sort: (a, b) => a.datasetIndex - b.datasetIndex } },
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
      pointRadius: s.points.length > 60 ? 0 : 2,
      hidden: hidden.has(s.label),
      // a shorter line over a longer one: where runs agree, the one that stopped early stays seen
      order: s.points.length,
    }));
    chart.update('none');
  }
  return { chart, show };
}
