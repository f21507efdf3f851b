import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modelFigures } from '../../static/js/modelfigures.js';

// /api/runs/compare as it answers for three runs of one pipeline (oldest first)
const compare = {
  runs: [{ id: 4 }, { id: 6 }, { id: 7 }],
  metrics: [
    { node: 'train', name: 'training_loss', goal: 'minimize', final: [0.2, 0.4, 0.5], kept: [null, null, null], kept_step: [null, null, null] },
    { node: 'train', name: 'validation_top1_accuracy', goal: 'maximize', final: [0.75, 0.6, 0.5], kept: [0.73, 0.55, 0.52], kept_step: [4, 2, 3] },
    { node: 'evaluate', name: 'accuracy', goal: 'maximize', final: [0.9, 0.9, 0.9], kept: [null, null, null], kept_step: [null, null, null] },
  ],
};

test('the register dialog judges a model by its validation accuracy at the kept epoch, beside the best run', () => {
  assert.deepEqual(modelFigures(compare, 7, 'train'), {
    metric: 'validation_top1_accuracy', goal: 'maximize',
    mine: { run: 7, value: 0.52, step: 3 }, best: { run: 4, value: 0.73, step: 4 } });
  assert.equal(modelFigures(compare, 4, 'train').best.run, 4);
});

test('a node with no metric to judge by gets no figures; a loss alone is judged lower-is-better', () => {
  assert.equal(modelFigures(compare, 7, 'export'), null);
  const losses = { ...compare, metrics: [compare.metrics[0]] };
  assert.deepEqual(modelFigures(losses, 7, 'train').best, { run: 4, value: 0.2, step: null });
});
