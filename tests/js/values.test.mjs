import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bestIndices, formatNumber, formatValue } from '../../static/js/values.js';

test('numbers read as a person writes them', () => {
  assert.equal(formatNumber(32), '32');
  assert.equal(formatNumber(0.123456), '0.1235');
  assert.equal(formatNumber(0.5), '0.5');
  assert.equal(formatNumber(0.000316227), '3.162e-4');
  assert.equal(formatNumber(0.0001), '1e-4');
  assert.equal(formatNumber(12345678.9), '1.235e+7');
  assert.equal(formatNumber(0), '0');
});

test('any value, and none', () => {
  assert.equal(formatValue(null), '—');
  assert.equal(formatValue(undefined), '—');
  assert.equal(formatValue(true), 'true');
  assert.equal(formatValue('adam'), 'adam');
  assert.equal(formatValue(''), '""');
  assert.equal(formatValue([1, 2]), '[1,2]');
});

test('the best of a row is marked only when a goal says which way is better and values differ', () => {
  assert.deepEqual(bestIndices([0.5, 0.25, null], 'minimize'), [1]);
  assert.deepEqual(bestIndices([0.5, 0.9, 0.9], 'maximize'), [1, 2]);
  assert.deepEqual(bestIndices([0.5, 0.9], null), []);
  assert.deepEqual(bestIndices([0.5, 0.5], 'maximize'), []);
  assert.deepEqual(bestIndices([0.5, null], 'maximize'), []);
});
