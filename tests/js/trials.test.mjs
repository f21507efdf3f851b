import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareHref, curveSeries, runHref, summaryText, sweepFinished, trialDetail, trialDuration, trialStatus } from '../../static/js/trials.js';
import { runColour } from '../../static/js/charts/colours.js';
import { STATUSES } from './fixtures.mjs';

const sweep = {
  pipeline: 4, status: 'running', duration: null,
  config: { sampling: 'random', policy: { type: 'BanditPolicy' }, max_total_runs: 8, max_concurrent_runs: 2 },
  primary_metric: { name: 'accuracy', goal: 'maximize' },
  trials: [
    { number: 0, run: 11, status: 'completed', curve: [[1, 0.5], [2, 0.7]], best: true },
    { number: 1, run: 12, status: 'early_terminated', curve: [[1, 0.2]], best: false },
    { number: 2, run: null, status: 'queued', curve: [], best: false },
  ],
};
const TRIAL_FINISHED = ['cancelled', 'completed', 'early_terminated', 'failed'];

test('the summary line says how the sweep samples, stops and how far it is', () => {
  assert.equal(summaryText(sweep, TRIAL_FINISHED),
    'random sampling · BanditPolicy · maximize accuracy · 2 of 8 trials finished · up to 2 at a time');
  assert.match(summaryText({ ...sweep, duration: 75 }, TRIAL_FINISHED), / · took 1 min 15 s$/);
});

test('a sweep is over in the statuses the server calls finished', () => {
  assert.equal(sweepFinished(sweep, STATUSES), false);
  assert.equal(sweepFinished({ status: 'cancelled' }, STATUSES), true);
});

test('a trial: its status in words, how long it ran, the page of its run', () => {
  assert.equal(trialStatus(sweep.trials[1]), 'early terminated');
  assert.equal(trialDuration({ duration: 4.21 }), '4.2 s');
  assert.equal(trialDuration({ started_at: '2026-01-01T00:00:00Z', finished_at: null }, Date.parse('2026-01-01T00:00:12Z')), '12.0 s so far');
  assert.equal(trialDuration({ started_at: null }), '');
  assert.equal(runHref(sweep, sweep.trials[0]), '/pipelines/4/?run=11');
  assert.equal(runHref(sweep, sweep.trials[2]), null);
  assert.equal(compareHref([11, 12]), '/runs/compare?runs=11,12');
});

test('a stopped trial says how it ended, without repeating its status', () => {
  assert.equal(trialDetail({ status: 'early_terminated', detail: 'early terminated at epoch 2: the script stopped when asked at epoch 2' }),
    'at epoch 2: the script stopped when asked at epoch 2');
  assert.equal(trialDetail({ status: 'completed', detail: 'asked to stop at epoch 2, it ran its course and finished on its own' }),
    'asked to stop at epoch 2, it ran its course and finished on its own');
  assert.equal(trialDetail({ status: 'completed', detail: '' }), '');
  assert.equal(trialDetail({ status: 'queued' }), '');
  assert.equal(trialDetail({ status: 'completed', detail: '', reused_from_run: 4 }), 'reused the training of run #4');
});

test('every trial with a curve is one line, the best one thicker', () => {
  const series = curveSeries(sweep);
  assert.deepEqual(series.map((s) => [s.label, s.width, s.colour]), [
    ['Trial 0 (best)', 4, runColour(0)], ['Trial 1', 2, runColour(1)]]);
  assert.deepEqual(series[0].points, [[1, 0.5], [2, 0.7]]);
  assert.deepEqual(series.map((s) => s.marked), [null, null]);
  // a trial whose training kept an earlier epoch's model: that epoch is marked on its line
  const kept = curveSeries({ ...sweep, trials: [{ ...sweep.trials[0], kept_step: 1 }] });
  assert.equal(kept[0].marked, 1);
});
