import assert from 'node:assert/strict';
import { test } from 'node:test';
import { droppedNote, entryMatches, feedOf, ranked } from '../../static/js/quickadd.js';
import { MODULES, link } from './fixtures.mjs';

const entry = (kind, label = MODULES.get(kind).label, extra = {}) => ({ kind, label, text: label, module: MODULES.get(kind), ...extra });

test('an entry is found by its text or its module\'s label, kind, category or description', () => {
  const m = { label: 'Resize', kind: 'resize', category: 'Data Transformation', description: 'Scales images' };
  assert.ok(entryMatches('Resize', m, 'RES'));
  assert.ok(entryMatches('Resize', m, 'transf'));
  assert.ok(entryMatches('Resize', m, ' scales '));
  assert.ok(entryMatches('digits', { label: 'Dataset', kind: 'dataset' }, 'dataset'));
  assert.ok(!entryMatches('Resize', m, 'zip'));
  assert.ok(entryMatches('Resize', m, ''));
});

test('labels that start with the query come first, then labels that have it, then the rest', () => {
  const entries = [entry('train'), entry('resize'), entry('dataset', 'digits'), entry('dataset'), entry('source')];
  assert.deepEqual(ranked(entries, 'data').map((e) => e.label), ['Dataset', 'digits']);
  assert.deepEqual(ranked(entries, 's').map((e) => e.label), ['Source', 'Resize', 'digits', 'Dataset']);
  assert.equal(ranked(entries, '').length, 5);
});

test('the module selected feeds the first input of the new one that accepts its first output', () => {
  const from = { id: 'n1', kind: 'source' };
  assert.deepEqual(feedOf(MODULES, from, { id: 'n2', kind: 'train' }, []), { from: 'n1', fromPort: 'out:images', toPort: 'in:data' });
  assert.deepEqual(feedOf(MODULES, from, { id: 'n2', kind: 'zip' }, []), { from: 'n1', fromPort: 'out:images', toPort: 'in:anything' });
  assert.equal(feedOf(MODULES, from, { id: 'n2', kind: 'dataset' }, []), null); // no input
  assert.equal(feedOf(MODULES, { id: 'z', kind: 'zip' }, { id: 'n2', kind: 'resize' }, []), null); // no output
  assert.equal(feedOf(MODULES, from, { id: 'n2', kind: 'gone' }, []), null);
  assert.deepEqual(feedOf(MODULES, from, { id: 'n2', kind: 'resize' }, [link('e1', 'n0', 'images', 'n1', 'images')]),
    { from: 'n1', fromPort: 'out:images', toPort: 'in:images' });
});

test('a link dropped from one output feeds from that output; from a selection, the first output that fits', () => {
  const port = (name, type) => ({ name, label: name, type });
  const split = { kind: 'split', label: 'Split', inputs: [], outputs: [port('model', 'Model'), port('left', 'ImageDirectory'), port('right', 'ImageDirectory')] };
  const modules = new Map([...MODULES, ['split', split]]);
  const from = { id: 's', kind: 'split' };
  assert.deepEqual(feedOf(modules, from, { id: 'n2', kind: 'resize' }, []), { from: 's', fromPort: 'out:left', toPort: 'in:images' });
  assert.deepEqual(feedOf(modules, from, { id: 'n2', kind: 'resize' }, [], 'out:right'), { from: 's', fromPort: 'out:right', toPort: 'in:images' });
  assert.equal(feedOf(modules, from, { id: 'n2', kind: 'resize' }, [], 'out:model'), null); // that output fits no input of it
});

test('a link dropped from an output no module takes says so once', () => {
  const output = { label: 'Evaluation results', what: 'metrics of a scored dataset' };
  assert.equal(droppedNote('Evaluate Model (Evaluation results)', output, true), 'links from Evaluate Model (Evaluation results)');
  assert.equal(droppedNote('Evaluate Model (Evaluation results)', output, false),
    'Nothing takes Evaluate Model (Evaluation results): no module has an input for metrics of a scored dataset. '
    + 'Type to add a module without a link.');
});
