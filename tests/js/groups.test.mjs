import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chartGroups, quantity, quantityTitle } from '../../static/js/charts/groups.js';

test('training and validation figures of one quantity share a chart', () => {
  const names = ['learning_rate', 'training_images_per_second', 'training_loss', 'training_error',
    'training_top1_accuracy', 'validation_loss', 'validation_top1_accuracy', 'validation_top5_accuracy'];
  assert.deepEqual(chartGroups(names).map((g) => [g.title, g.names]), [
    ['Loss', ['training_loss', 'validation_loss']],
    ['Top-1 accuracy', ['training_top1_accuracy', 'validation_top1_accuracy']],
    ['Top-5 accuracy', ['validation_top5_accuracy']],
    ['Learning rate', ['learning_rate']],
    ['Images per second', ['training_images_per_second']],
    ['Error', ['training_error']],
  ]);
});

test("a script's own names group the same way, and a bare name stands alone", () => {
  assert.deepEqual(chartGroups(['loss', 'train_acc', 'val_acc', 'val-loss']).map((g) => g.names),
    [['loss', 'val-loss'], ['train_acc', 'val_acc']]);
  assert.deepEqual(chartGroups(['progress', 'val_acc', 'val_loss']).map((g) => g.title), ['Loss', 'Acc', 'Progress']);
  assert.equal(quantity('validation'), 'validation');
  assert.equal(quantity('training_'), 'training_');
  assert.equal(quantityTitle('progress'), 'Progress');
});
