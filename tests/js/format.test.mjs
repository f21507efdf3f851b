import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOG_TAIL_BYTES, bytes, datasetName, duration, keepTail, nodeStatusText, runSummary, tailStart, uploadRefusal, urlPath } from '../../static/js/format.js';
import { statusBook } from '../../static/js/statuses.js';
import { STATUSES } from './fixtures.mjs';

test('durations read in seconds under a minute, in minutes and seconds above', () => {
  assert.equal(duration(null), '');
  assert.equal(duration(undefined), '');
  assert.equal(duration(4.21), '4.2 s');
  assert.equal(duration(187), '3 min 7 s');
});

test('a node shows its status and how long it took', () => {
  assert.equal(nodeStatusText(null), '');
  assert.equal(nodeStatusText({ status: 'not_run' }), 'not run');
  assert.equal(nodeStatusText({ status: 'completed', duration: 1.23 }), 'completed · 1.2 s');
});

test('the run banner counts the modules that are done', () => {
  const book = statusBook(STATUSES);
  const run = { id: 7, status: 'running', nodes: { a: { status: 'completed' }, b: { status: 'running' }, c: { status: 'not_run' } } };
  assert.equal(runSummary(run, book), 'Run #7: running · 2/3 modules done');
  assert.equal(runSummary({ ...run, duration: 5, message: 'slow' }, book, 'cancelling…'),
    'Run #7: running · 2/3 modules done · 5.0 s · slow · cancelling…');
  assert.equal(runSummary({ id: 8, status: 'queued', nodes: {} }, book), 'Run #8: queued');
});

test('an archive over the limit is refused before it is sent', () => {
  const max = 4 * 2 ** 20;
  assert.equal(uploadRefusal(undefined, max), 'Choose an archive first.');
  assert.equal(uploadRefusal({ name: 'a.zip', size: max }, max), '');
  assert.equal(uploadRefusal({ name: 'big.zip', size: 5 * 2 ** 20 }, max),
    'big.zip is 5.0 MB: larger than the upload limit of 4 MB. Nothing was uploaded.');
});

test('a dataset is named after its archive', () => {
  assert.equal(datasetName('digits.tar.gz'), 'digits');
  assert.equal(datasetName('Cats.ZIP'), 'Cats');
  assert.equal(datasetName('notes.txt'), 'notes.txt');
});

test('file paths are encoded segment by segment', () => {
  assert.equal(urlPath('a b/c#d.png'), 'a%20b/c%23d.png');
  assert.equal(bytes(1234), `${(1234).toLocaleString()} bytes`);
});

test('a long log is shown from its end, and what is shown stays bounded at a line start', () => {
  assert.equal(tailStart(1000), 0);
  assert.equal(tailStart(30 * 1048576), 30 * 1048576 - LOG_TAIL_BYTES);
  const lines = Array.from({ length: 100000 }, (_, i) => `line ${i}`).join('\n');
  const kept = keepTail(lines, 1000);
  assert.ok(kept.length <= 1000);
  assert.ok(kept.startsWith('line ') && kept.endsWith('line 99999'));
  assert.equal(keepTail('short'), 'short');
});
