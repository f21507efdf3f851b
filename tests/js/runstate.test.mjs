import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addMetric, applyNodeEvent, askAfter, mergeRun, nodeStatus, openingRun, unknownRun } from '../../static/js/runstate.js';
import { statusBook } from '../../static/js/statusbook.js';
import { STATUSES } from './fixtures.mjs';

const book = statusBook(STATUSES);

test('a run not yet heard of is queued with no nodes', () => {
  assert.deepEqual(unknownRun(4, book), { id: 4, nodes: {}, status: 'queued' });
});

test('an answer does not take back what a newer event said', () => {
  const known = { id: 1, nodes: { a: { status: 'completed', duration: 2 }, b: { status: 'queued' } } };
  const fresh = { id: 1, status: 'running', nodes: { a: { status: 'running' }, b: { status: 'running' }, c: { status: 'pending' } } };
  assert.deepEqual(mergeRun(known, fresh, book), { id: 1, status: 'running',
    nodes: { a: { status: 'completed', duration: 2 }, b: { status: 'running' }, c: { status: 'pending' } } });
});

test('node events set the node status; the first one starts the run', () => {
  const run = unknownRun(1, book);
  assert.ok(applyNodeEvent(run, { type: 'node_started', node: 'a' }, book));
  assert.equal(run.status, 'running');
  assert.ok(applyNodeEvent(run, { type: 'node_failed', node: 'a', data: { duration: 3, error: 'boom' } }, book));
  assert.deepEqual(run.nodes.a, { status: 'failed', duration: 3, error: 'boom' });
  assert.equal(nodeStatus(run, 'a'), 'failed');
  assert.equal(nodeStatus(run, 'b'), null);
  assert.ok(!applyNodeEvent(run, { type: 'metric', node: 'a', data: {} }, book));
  assert.ok(!applyNodeEvent(run, { type: 'node_started' }, book));
});

test("a node started has the event's time as its start until the server's answer says", () => {
  const run = unknownRun(1, book);
  applyNodeEvent(run, { type: 'node_started', node: 'a', at: '2026-11-24T10:00:01Z' }, book);
  assert.equal(run.nodes.a.started_at, '2026-11-24T10:00:01Z');
  const answered = mergeRun(run, { id: 1, status: 'running', nodes: { a: { status: 'running', started_at: '2026-11-24T10:00:00.400Z' } } }, book);
  assert.equal(answered.nodes.a.started_at, '2026-11-24T10:00:00.400Z');
  applyNodeEvent(answered, { type: 'node_started', node: 'a', at: '2026-11-24T10:00:02Z' }, book); // a late copy
  assert.equal(answered.nodes.a.started_at, '2026-11-24T10:00:00.400Z');
});

test('metric points gather by node and name, numbered when no step is given', () => {
  const metrics = {};
  addMetric(metrics, { node: 'a', data: { name: 'loss', step: 5, value: 0.5 } });
  addMetric(metrics, { node: 'a', data: { name: 'loss', value: 0.25 } });
  addMetric(metrics, { node: 'a', data: { name: 'acc', value: 0.9 } });
  assert.deepEqual(metrics, { a: { loss: [{ x: 5, y: 0.5 }, { x: 1, y: 0.25 }], acc: [{ x: 0, y: 0.9 }] } });
});

test('an epoch logged again after a resume replaces the points from that epoch on', () => {
  const metrics = {};
  for (const [step, value] of [[1, 0.9], [2, 0.5], [3, 0.4], [2, 0.52], [3, 0.41], [4, 0.3]]) {
    addMetric(metrics, { node: 't', data: { name: 'loss', step, value } });
  }
  assert.deepEqual(metrics.t.loss, [{ x: 1, y: 0.9 }, { x: 2, y: 0.52 }, { x: 3, y: 0.41 }, { x: 4, y: 0.3 }]);
});

test("an old run's replayed events never take a finished node back to running", () => {
  const run = { id: 1, status: 'completed', nodes: { src: { status: 'completed', duration: 1 }, a: { status: 'failed' } } };
  assert.ok(!applyNodeEvent(run, { type: 'node_started', node: 'src', at: '2026-11-24T10:00:01Z' }, book));
  assert.ok(!applyNodeEvent(run, { type: 'node_started', node: 'a' }, book));
  assert.deepEqual(run.nodes, { src: { status: 'completed', duration: 1 }, a: { status: 'failed' } });
  assert.ok(applyNodeEvent(run, { type: 'node_finished', node: 'src', data: { duration: 1 } }, book));
  assert.equal(run.nodes.src.status, 'completed');
});

test('after a sweep the designer opens on its best trial, not on the trial that ended last', () => {
  const trial = (id, sweep, best = false) => ({ id, trial: { sweep, number: id, best } });
  assert.equal(openingRun([]), null);
  assert.equal(openingRun([{ id: 3 }, trial(2, 1, true)]).id, 3); // a run submitted since: the newest
  assert.equal(openingRun([trial(9, 2), trial(8, 2, true), trial(7, 2), { id: 4 }]).id, 8);
  assert.equal(openingRun([trial(9, 2), trial(8, 2), { id: 4 }]).id, 4); // no best named (yet): its own latest run
  assert.equal(openingRun([trial(9, 2), trial(8, 2)]).id, 9);
});

test('a node queued, started, finished or reused is painted from its event alone: no whole run is fetched', () => {
  const run = unknownRun(1, book);
  assert.ok(applyNodeEvent(run, { type: 'node_queued', node: 'a' }, book));
  assert.equal(nodeStatus(run, 'a'), 'queued');
  for (const type of ['node_started', 'node_finished', 'node_reused']) assert.equal(askAfter({ type, node: 'a' }, book), null, type);
  assert.equal(askAfter({ type: 'metric', node: 'a' }, book), null);
  // still queued a moment later: the run's answer says why (no worker, the broker away)
  assert.equal(askAfter({ type: 'node_queued', node: 'a' }, book), 'later');
  // the nodes after a failed or cancelled one end "not run", which no event says
  assert.equal(askAfter({ type: 'node_failed', node: 'a' }, book), 'now');
  assert.equal(askAfter({ type: 'node_cancelled', node: 'a' }, book), 'now');
});
