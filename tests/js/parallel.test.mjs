import assert from 'node:assert/strict';
import { test } from 'node:test';
import { axesOf, linesOf, plotted, position, ticks } from '../../static/js/charts/parallel.js';
import { ramp, runColour } from '../../static/js/charts/colours.js';

const sweep = (goal = 'maximize') => ({
  swept: ['learning_rate', 'batch_size', 'optimizer'],
  primary_metric: { name: 'accuracy', goal },
  config: {
    parameter_space: [
      { name: 'learning_rate', expression: 'loguniform', values: [-9, -2] },
      { name: 'batch_size', expression: 'choice', values: [64, 16, 32] },
      { name: 'optimizer', expression: 'choice', values: ['sgd', 'adam'] },
    ],
  },
  trials: [
    { number: 0, values: { learning_rate: 0.001, batch_size: 16, optimizer: 'sgd' }, value: 0.5, best: false },
    { number: 1, values: { learning_rate: 0.01, batch_size: 64, optimizer: 'adam' }, value: 0.9, best: true },
    { number: 2, values: { learning_rate: 0.1, batch_size: 32, optimizer: 'adam' }, value: null, best: false },
  ],
});

test('one axis per swept parameter, then the primary metric; log for loguniform, a choice shows its choices', () => {
  const axes = axesOf(sweep());
  assert.deepEqual(axes.map((a) => [a.label, a.kind]), [
    ['learning_rate', 'log'], ['batch_size', 'category'], ['optimizer', 'category'], ['accuracy', 'linear']]);
  assert.ok(Math.abs(axes[0].lo - Math.exp(-9)) < 1e-12 && Math.abs(axes[0].hi - Math.exp(-2)) < 1e-12);
  assert.deepEqual(axes[1].categories, ['16', '32', '64']); // in order, and nothing between them
  assert.equal(position(axes[1], 32), 0.5);
  assert.deepEqual(axes[2].categories, ['sgd', 'adam']);
  assert.deepEqual([axes[3].lo, axes[3].hi, axes[3].metric], [0.5, 0.9, true]);
});

test('only trials with a metric value are drawn', () => {
  assert.deepEqual(plotted(sweep()).map((t) => t.number), [0, 1]);
});

test('positions run from 0 at the bottom to 1 at the top, on a log scale where the axis is one', () => {
  const log = { kind: 'log', lo: 0.001, hi: 0.1 };
  assert.equal(position(log, 0.01), 0.5);
  assert.equal(position(log, 0.001), 0);
  assert.equal(position(log, -1), null);
  assert.equal(position({ kind: 'linear', lo: 2, hi: 2 }, 2), 0.5);
  assert.equal(position({ kind: 'category', categories: ['a', 'b', 'c'] }, 'c'), 1);
  assert.equal(position({ kind: 'category', categories: ['a'] }, 'a'), 0.5);
  assert.equal(position({ kind: 'category', categories: ['a'] }, 'z'), null);
  assert.deepEqual(ticks(log).map((t) => t.text), ['0.001', '0.01', '0.1']);
});

test('axes are labelled at round values: powers of ten on a log axis, whole steps for whole numbers', () => {
  const texts = (axis) => ticks(axis).map((t) => t.text);
  assert.deepEqual(texts({ kind: 'log', lo: Math.exp(-9.3), hi: Math.exp(-1) }), ['1e-4', '0.001', '0.01', '0.1']);
  assert.deepEqual(texts({ kind: 'log', lo: 0.002, hi: 0.008 }), ['0.002', '0.008']); // no power of ten inside: its ends
  assert.deepEqual(texts({ kind: 'log', lo: 1e-9, hi: 1 }), ['1e-9', '1e-7', '1e-5', '0.001', '0.1']);
  assert.deepEqual(texts({ kind: 'linear', lo: 0.5, hi: 0.8 }), ['0.5', '0.6', '0.7', '0.8']);
  assert.deepEqual(texts({ kind: 'linear', lo: 0.512, hi: 0.93 }), ['0.6', '0.7', '0.8', '0.9']);
  assert.deepEqual(texts({ kind: 'linear', lo: 0, hi: 5, whole: true }), ['0', '1', '2', '3', '4', '5']);
  assert.deepEqual(texts({ kind: 'linear', lo: 2, hi: 3, whole: true }), ['2', '3']);
  assert.deepEqual(texts({ kind: 'linear', lo: 7, hi: 7 }), ['7']);
  for (const t of ticks({ kind: 'linear', lo: 0.512, hi: 0.93 })) assert.ok(t.at >= 0 && t.at <= 1);
  const epochs = axesOf({ swept: ['epochs'], config: { parameter_space: [{ name: 'epochs', expression: 'randint', values: [6] }] },
    trials: [{ number: 0, values: { epochs: 2 }, value: 0.5 }] })[0];
  assert.equal(epochs.whole, true);
});

test('the best trial is drawn last, darkest; a minimized metric turns the ramp round', () => {
  const s = sweep();
  const lines = linesOf(s, axesOf(s));
  assert.deepEqual(lines.map((l) => [l.number, l.best]), [[0, false], [1, true]]);
  assert.equal(lines[1].colour, ramp(1));
  assert.equal(lines[0].colour, ramp(0));
  assert.match(lines[1].title, /^Trial 1: learning_rate 0.01, batch_size 64, optimizer adam, accuracy 0.9$/);
  const m = sweep('minimize');
  assert.equal(linesOf(m, axesOf(m)).find((l) => l.number === 0).colour, ramp(1));
});

test('colours: ten hues for runs, a ramp from light to dark', () => {
  assert.equal(new Set(Array.from({ length: 10 }, (_, i) => runColour(i))).size, 10);
  assert.equal(runColour(10), runColour(0));
  assert.equal(ramp(0), 'rgb(222, 143, 5)');
  assert.equal(ramp(1), 'rgb(68, 1, 84)');
  assert.equal(ramp(2), ramp(1));
});
