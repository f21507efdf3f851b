import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_STATUS_COLOUR, statusBook, statusLabel } from '../../static/js/statusbook.js';
import { STATUSES } from './fixtures.mjs';

const book = statusBook(STATUSES);

test('every status the server names for a node has its own colour', () => {
  for (const s of STATUSES.node) assert.ok(book.hasColour(s), s);
  assert.equal(book.colour(null), NO_STATUS_COLOUR);
  assert.equal(book.colour('no_such_status'), NO_STATUS_COLOUR);
});

test('terminal, finished and active come from the server', () => {
  assert.ok(book.isTerminal('not_run') && book.isTerminal('reused') && !book.isTerminal('running'));
  assert.ok(book.isRunFinished('cancelled') && !book.isRunFinished('not_run') && !book.isRunFinished('running'));
  assert.ok(book.isActive('pending') && book.isActive('queued') && !book.isActive('completed'));
});

test('a node moves pending, queued, running, then any final status', () => {
  const steps = ['pending', 'queued', 'running', 'completed', 'failed'].map(book.step);
  assert.deepEqual(steps, [0, 1, 2, 3, 3]);
});

test('socket events name the status they set', () => {
  assert.equal(book.forEvent('node_started'), book.running);
  assert.equal(book.forEvent('node_reused'), 'reused');
  assert.equal(book.forEvent('metric'), null);
  assert.equal(book.forEvent('toString'), null);
  assert.equal(book.newRun, 'queued');
});

test('a status is written with spaces', () => {
  assert.equal(statusLabel('not_run'), 'not run');
  assert.equal(statusLabel('running'), 'running');
});
