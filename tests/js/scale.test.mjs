import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as SCALE from '../../static/js/charts/scale.js';
import { logTick, yScaleType } from '../../static/js/charts/scale.js';

const line = (...ys) => ({ points: ys.map((y, i) => [i + 1, y]) });

test('a loss that falls from 360 to under 1 is drawn on a log axis', () => {
  assert.equal(yScaleType([line(2.1, 0.4, 0.1), line(360, 95, 0.3)]), 'logarithmic');
});

test('figures within two decades, a zero or a negative stay on a linear axis', () => {
  assert.equal(yScaleType([line(2.3, 1.1, 0.05)]), 'linear'); // 46x
  assert.equal(yScaleType([line(0.1, 0.9, 0.98)]), 'linear'); // an accuracy
  assert.equal(yScaleType([line(360, 0, 0.3)]), 'linear');
  assert.equal(yScaleType([line(-1, 300)]), 'linear');
  assert.equal(yScaleType([line(5)]), 'linear');
  assert.equal(yScaleType([]), 'linear');
});

test('a line the reader hid does not decide the axis', () => {
  assert.equal(yScaleType([line(2.1, 0.4), { ...line(360, 0.3), hidden: true }]), 'linear');
});

test("a log axis labels 1, 2 and 5 of each decade, written short", () => {
  assert.deepEqual([1, 0.5, 0.2, 0.1, 0.05, 0.01, 200, 0.3, 7, 0].map(logTick), ['1', '0.5', '0.2', '0.1', '0.05', '0.01', '200', '', '', '']);
});

test('a loss or an error falls by factors; an accuracy or a score does not', () => {
  const { fallsByFactors } = SCALE;
  assert.deepEqual(['loss', 'validation_loss', 'Top-1 error', 'top1_accuracy', 'score', 'learning_rate'].map(fallsByFactors),
    [true, true, true, false, false, false]);
});
