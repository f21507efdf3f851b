import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scalingNote } from '../../static/js/scaling.js';

const train = { params: [{ name: 'batch_size', default: 16 }, { name: 'learning_rate', default: 0.001 }] };

test('one process: nothing to say', () => {
  assert.equal(scalingNote({ parameters: {}, run_settings: {} }, train), '');
  assert.equal(scalingNote({ parameters: {}, run_settings: { node_count: 1, process_count_per_node: 1 } }, train), '');
});

test('several processes: the global batch, the steps per epoch and the two remedies', () => {
  assert.equal(scalingNote({ parameters: {}, run_settings: { process_count_per_node: 2 } }, train),
    '2 processes, each with Batch size 16: a global batch of 32 images per step, and 2 times fewer steps per epoch than '
    + '1 process takes. To train as 1 process does, scale the learning rate with the global batch (Learning rate 0.001 → '
    + '0.002, with a few warm-up steps), or set Batch size to 8 to keep the global batch of 16.');
  const odd = scalingNote({ parameters: { batch_size: 10, learning_rate: 0.05 }, run_settings: { node_count: 3, process_count_per_node: 1 } }, train);
  assert.ok(odd.startsWith('3 processes, each with Batch size 10: a global batch of 30 images per step'), odd);
  assert.ok(odd.includes('Learning rate 0.05 → 0.15') && odd.endsWith('set Batch size to about 3 to keep a global batch near 10.'), odd);
});

test('a module without a Batch size (a component) gets no note', () => {
  assert.equal(scalingNote({ parameters: {}, run_settings: { process_count_per_node: 2 } }, { params: [{ name: 'mode', default: 'fast' }] }), '');
  assert.equal(scalingNote({ parameters: {}, run_settings: { process_count_per_node: 2 } }, null), '');
});
