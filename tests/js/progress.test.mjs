import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clockOffset, elapsed, figure, figuresText, figuresTitle, nodeLines, noteProgress, since, stepText } from '../../static/js/progress.js';

const metric = (name, value, step, steps) => ({ type: 'metric', node: 'train', data: { name, value, step, ...(steps ? { steps } : {}) } });

function trained(upTo, steps = 10) {
  const progress = {};
  for (let e = 1; e <= upTo; e += 1) {
    noteProgress(progress, metric('training_loss', 1 / e + 0.0123, e, steps));
    noteProgress(progress, metric('validation_loss', 1.1 / e, e, steps));
    noteProgress(progress, metric('validation_top1_accuracy', 0.8 + e / 100, e, steps));
  }
  return progress.train;
}

test('the time so far in whole seconds, minutes and seconds, hours and minutes', () => {
  assert.deepEqual([0, 9.9, 60, 72.4, 3599, 3600 + 5 * 60 + 7, -2].map(elapsed), ['0 s', '9 s', '1 min 0 s', '1 min 12 s', '59 min 59 s', '1 h 5 min', '0 s']);
  assert.equal(since('2026-11-24T10:00:00+00:00', Date.parse('2026-11-24T10:01:12.5Z')), 72.5);
  assert.equal(since(null, 0), null);
});

test('figures in three significant digits', () => {
  assert.deepEqual([0.41234, 12.44, 0.0012345, 3].map(figure), ['0.412', '12.4', '0.00123', '3']);
});

test("a node's progress: the furthest step, the step count it reports, every last figure", () => {
  const p = trained(3);
  assert.equal(p.step, 3);
  assert.equal(p.steps, 10);
  assert.equal(stepText(p, 'epoch'), 'epoch 3/10 done');
  assert.equal(figuresText(p), 'loss 0.346 · acc 0.830');
  assert.equal(figuresTitle(p, 'epoch'), 'epoch 3 of 10\ntraining_loss 0.346\nvalidation_loss 0.367\nvalidation_top1_accuracy 0.83');
  // a module that does not say how many: the count it was asked for, if known; else none
  const toy = {};
  noteProgress(toy, metric('loss', 0.5, 2));
  noteProgress(toy, metric('accuracy', 0.75, 2));
  noteProgress(toy, metric('loss', 0.6, 1)); // late: the step stays the furthest
  assert.equal(stepText(toy.train, 'step', 8), 'step 2/8 done');
  assert.equal(stepText(toy.train, 'step'), 'step 2 done');
  assert.equal(figuresText(toy.train), 'loss 0.6 · acc 0.750');
  assert.equal(stepText(undefined, 'epoch', 5), '');
});

test('running: status, epoch and time on the status line, loss and accuracy under it; ended: status and duration', () => {
  const now = Date.parse('2026-11-24T10:01:12Z');
  const running = { status: 'running', started_at: '2026-11-24T10:00:00Z' };
  assert.deepEqual(nodeLines(running, true, trained(3), { unit: 'epoch', now }),
    { status: 'running · epoch 3/10 done · 1 min 12 s', progress: 'loss 0.346 · acc 0.830', title: figuresTitle(trained(3), 'epoch') });
  assert.deepEqual(nodeLines(running, true, undefined, { now }), { status: 'running · 1 min 12 s', progress: '', title: '' });
  assert.equal(nodeLines({ status: 'running' }, true, undefined, { now }).status, 'running');
  const done = nodeLines({ status: 'completed', started_at: '2026-11-24T10:00:00Z', duration: 63 }, false, trained(10), { unit: 'epoch', now });
  assert.deepEqual([done.status, done.progress], ['completed · 1 min 3 s', '']);
  assert.ok(done.title.startsWith('epoch 10 of 10\ntraining_loss 0.112'));
  assert.deepEqual(nodeLines(null, false, undefined), { status: '', progress: '', title: '' });
});

test("a browser clock set wrong does not change a node's time so far: it is counted on the server's", () => {
  // the browser is 2 h behind; the answer left the server at 10:00:05.000, half-way through a 200 ms request
  const browserSent = Date.parse('2026-11-24T07:59:04.900Z');
  const skew = clockOffset('2026-11-24T10:00:05.000Z', browserSent, browserSent + 200);
  assert.equal(skew, 2 * 3600 * 1000 + 60 * 1000);
  const info = { status: 'running', started_at: '2026-11-24T10:00:00.000Z' };
  const { status } = nodeLines(info, true, null, { now: browserSent + 200 + skew });
  assert.equal(status, 'running · 5 s');
  assert.equal(clockOffset(null, 1, 2), 0);
  assert.equal(clockOffset('not a time', 1, 2), 0);
});

test('a failed node says why on hover, before its last figures', () => {
  const info = { status: 'failed', duration: 1.5, error: 'ModuleError: asked to fail (parameter Fail is on)\nTraceback...' };
  const lines = nodeLines(info, false, { step: 2, steps: 5, values: { loss: 0.5 } }, { unit: 'epoch' });
  assert.equal(lines.status, 'failed · 1.5 s');
  assert.equal(lines.title, 'ModuleError: asked to fail (parameter Fail is on)\nepoch 2 of 5\nloss 0.5');
});
