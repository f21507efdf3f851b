import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOG_TAIL_BYTES, bytes, codeParts, datasetName, duration, keepTail, nodeStatusText, runSummary, settleReturns, tailStart, uploadRefusal, urlPath, when } from '../../static/js/format.js';
import { statusBook } from '../../static/js/statusbook.js';
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
  // a reused node did no work: where its outputs come from, not a time of nothing
  assert.equal(nodeStatusText({ status: 'reused', duration: 0.01, reused_from_run: 3 }), 'reused · run #3');
});

test('the run banner counts the modules done, and apart those that failed or did not run', () => {
  const book = statusBook(STATUSES);
  const run = { id: 7, status: 'running', nodes: { a: { status: 'completed' }, b: { status: 'running' }, c: { status: 'not_run' } } };
  assert.equal(runSummary(run, book), 'Run #7: running · 1/3 modules done · 1 not run');
  assert.equal(runSummary({ ...run, duration: 5, message: 'slow' }, book, 'cancelling…'),
    'Run #7: running · 1/3 modules done · 1 not run · 5.0 s · slow · cancelling…');
  assert.equal(runSummary({ id: 8, status: 'queued', nodes: {} }, book), 'Run #8: queued');
  // a run whose modules all wait (no worker yet) is not said to run
  const waiting = { id: 9, status: 'running', message: 'No worker is running', nodes: { a: { status: 'queued' }, b: { status: 'pending' } } };
  assert.equal(runSummary(waiting, book), 'Run #9: queued · 0/2 modules done · No worker is running');
  assert.equal(runSummary({ ...waiting, nodes: { a: { status: 'reused' }, b: { status: 'queued' } } }, book), 'Run #9: running · 1/2 modules done (1 reused) · No worker is running');
  // over: reused modules counted apart; a trial its policy stopped says so, as the sweep page does
  const trial = { id: 10, status: 'completed', shown_status: 'early_terminated', nodes: { a: { status: 'reused' }, b: { status: 'completed' } } };
  assert.equal(runSummary(trial, book), 'Run #10: early terminated · 2/2 modules done (1 reused)');
});

test('a failed run names the module that failed and the first line of its error', () => {
  const book = statusBook(STATUSES);
  const run = { id: 9, status: 'failed', duration: 4, nodes: {
    src: { status: 'completed' }, left: { status: 'failed', error: '\nModuleError: asked to fail\n  File "x.py", line 3' },
    left2: { status: 'not_run' } } };
  assert.equal(runSummary(run, book, '', (id) => `Toy add (${id})`),
    'Run #9: failed · 1/3 modules done · 1 failed · 1 not run · 4.0 s · Toy add (left) failed: ModuleError: asked to fail');
  const long = { ...run, nodes: { left: { status: 'failed', error: 'x'.repeat(500) } } };
  assert.ok(runSummary(long, book).endsWith(`left failed: ${'x'.repeat(159)}…`));
  // a script's error: what it printed, then its traceback, whose last line says what went wrong
  const script = { ...run, nodes: { left: { status: 'failed', error: 'the command exited with code 1; the last lines of its output:\n'
    + 'epoch 1\nTraceback (most recent call last):\n  File "train.py", line 9, in <module>\n    raise RuntimeError("chatty was asked to fail")\n'
    + 'RuntimeError: chatty was asked to fail\n' } } };
  assert.ok(runSummary(script, book).endsWith('left failed: RuntimeError: chatty was asked to fail'), runSummary(script, book));
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

test('a progress bar rewritten with carriage returns shows its last state, as a terminal does', () => {
  assert.equal(settleReturns('epoch 1\n  0%|   | 0/10\r 50%|#  | 5/10\r100%|###| 10/10\nloss 0.4\n'),
    'epoch 1\n100%|###| 10/10\nloss 0.4\n');
  assert.equal(settleReturns('a\r\nb\r\n'), 'a\nb\n'); // Windows line ends
  assert.equal(settleReturns(' 40%\r'), ' 40%'); // the state shown until the next one comes
  assert.equal(settleReturns('plain\nlines'), 'plain\nlines');
});

test('a moment reads the same on every page and in every locale', () => {
  const d = new Date(2026, 10, 5, 7, 3, 9); // local time
  assert.equal(when(d.toISOString()), '2026-11-05 07:03:09');
});

test('a message quoting a command in backticks shows the command as code, without the backticks', () => {
  assert.deepEqual(codeParts('No worker is running (`make run` starts one).'),
    [['No worker is running (', false], ['make run', true], [' starts one).', false]]);
  assert.deepEqual(codeParts('`pipeline` is required'), [['pipeline', true], [' is required', false]]);
  assert.deepEqual(codeParts('a lone ` stays'), [['a lone ` stays', false]]);
  assert.deepEqual(codeParts(''), []);
});
