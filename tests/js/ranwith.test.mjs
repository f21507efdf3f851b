import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ranWithRows } from '../../static/js/ranwith.js';

const train = { params: [{ name: 'epochs', label: 'Epochs', default: 5 }, { name: 'learning_rate', label: 'Learning rate', default: 0.001 },
  { name: 'seed', label: 'Random seed', default: 1 }] };

test('a past run shows the values it ran with, and what the canvas holds now where it differs', () => {
  const rows = ranWithRows(train, { epochs: 2, learning_rate: 0.05 }, { parameters: { epochs: 2, learning_rate: 0.01 } });
  assert.deepEqual(rows, [
    { name: 'epochs', label: 'Epochs', value: '2', now: null },
    { name: 'learning_rate', label: 'Learning rate', value: '0.05', now: '0.01' },
    { name: 'seed', label: 'Random seed', value: '1', now: null }, // the default, then and now
  ]);
});

test('a parameter bound since is not called changed; a node gone from the canvas compares nothing', () => {
  const bound = ranWithRows(train, { learning_rate: 0.05 }, { parameters: {}, bindings: { learning_rate: 'lr' } });
  assert.equal(bound.find((r) => r.name === 'learning_rate').now, null);
  assert.ok(ranWithRows(train, { epochs: 9 }, null).every((r) => r.now === null));
});

test('what the server filled in at submit is not listed, and a dataset is named, not numbered', () => {
  const dataset = { kind: 'dataset', params: [{ name: 'dataset', label: 'Dataset', default: null },
    { name: 'stored_file', label: 'Stored file', default: '', filled_by_server: true }] };
  const ran = { dataset: 1, stored_file: '/srv/artifacts/datasets/1/abc/pets.zip' };
  const rows = ranWithRows(dataset, ran, { parameters: { dataset: 1 } }, new Map([[1, { name: 'pets' }], [2, { name: 'birds' }]]));
  assert.deepEqual(rows, [{ name: 'dataset', label: 'Dataset', value: 'pets', now: null }]);
  const since = ranWithRows(dataset, ran, { parameters: { dataset: 2 } }, new Map([[1, { name: 'pets' }], [2, { name: 'birds' }]]));
  assert.deepEqual(since.map((r) => [r.value, r.now]), [['pets', 'birds']]);
});
