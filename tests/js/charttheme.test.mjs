import assert from 'node:assert/strict';
import { test } from 'node:test';
import { paintOptions } from '../../static/js/charts/theme.js';

const DARK = { text: '#b7bfc8', grid: 'rgba(240, 246, 252, .12)' };
const LIGHT = { text: '#666', grid: 'rgba(0, 0, 0, .1)' };

test('every scale and the legend take the theme colours, their other options kept', () => {
  const options = { scales: { x: { ticks: { precision: 0 }, title: { display: true, text: 'epoch' } }, y: {} },
    plugins: { legend: { display: true, labels: { boxWidth: 12 } } } };
  paintOptions(options, DARK);
  assert.deepEqual(options.scales.x.ticks, { precision: 0, color: DARK.text });
  assert.deepEqual(options.scales.x.title, { display: true, text: 'epoch', color: DARK.text });
  assert.equal(options.scales.y.grid.color, DARK.grid);
  assert.equal(options.scales.y.border.color, DARK.grid);
  assert.deepEqual(options.plugins.legend.labels, { boxWidth: 12, color: DARK.text });
});

test('a colour the page chose stays; the one given before follows the theme', () => {
  const options = { scales: { x: { ticks: { color: 'red' } }, y: {} } };
  paintOptions(options, LIGHT);
  paintOptions(options, DARK, LIGHT);
  assert.equal(options.scales.x.ticks.color, 'red');
  assert.equal(options.scales.y.ticks.color, DARK.text);
  assert.equal(options.plugins.legend.labels.color, DARK.text);
});

test('a chart without scales (a pie) gets its legend coloured', () => {
  const options = paintOptions({}, DARK);
  assert.deepEqual(options, { plugins: { legend: { labels: { color: DARK.text } } } });
});
