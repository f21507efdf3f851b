import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NODE_H, NODE_H_BOUND, NODE_SHAPE, NODE_W, PROGRESS_H, edgeMeta, labelLines, labelText, nameLines, nodeBox, nodeLabel, nodeMeta, pastedEdgeMeta, portItems, portX, shorten } from '../../static/js/cells.js';
import { textWidth } from '../../static/js/textfit.js';
import { MODULES, link } from './fixtures.mjs';

const catalogue = { modules: MODULES, datasets: new Map([[12, { id: 12, name: 'digits' }]]) };

test('a node shows its module, a dataset node its dataset, an unknown kind says so', () => {
  assert.equal(nodeLabel({ kind: 'source' }, MODULES.get('source'), catalogue.datasets), 'Source');
  assert.equal(nodeLabel({ kind: 'dataset', parameters: { dataset: 12 } }, MODULES.get('dataset'), catalogue.datasets), 'Dataset: digits');
  assert.equal(nodeLabel({ kind: 'dataset', parameters: { dataset: 13 } }, MODULES.get('dataset'), catalogue.datasets), 'Dataset');
  assert.equal(nodeLabel({ kind: 'gone' }, undefined, catalogue.datasets), 'gone (unknown module)');
});

test('long labels take a second line, cut only past it; the first line leaves the problem badge room', () => {
  assert.equal(shorten('Convert to Image Directory'), 'Convert to Image Directory');
  assert.equal(labelLines(shorten('Convert to Image Directory')), 1);
  // issue 30: "Registered model: Photos-..." cut the name the user chose the node for
  const model = 'Registered model: Photos-classifier-of-2026';
  assert.equal(labelText(model, false), 'Registered model:\nPhotos-classifier-of-2026');
  assert.equal(labelLines(labelText(model, true)), 2); // the badge never changes a node's height
  const long = 'Load dataset: handwritten-digits-scanned-at-full-resolution-and-then-some';
  const [plain, badged] = [labelText(long, false), labelText(long, true)];
  assert.equal(labelLines(plain), 2);
  assert.ok(plain.endsWith('…') && badged.endsWith('…'));
  for (const line of plain.split('\n')) assert.ok(16 + textWidth(line, 13) <= NODE_W - 4, line);
  const oneLine = 'Apply Image Transformation to the validation set';
  assert.ok(16 + textWidth(labelText(oneLine, true).split('\n')[0], 13) <= NODE_W - 10 - 30); // left of "⚠ 12"
});

test('a label on two lines moves the status down a line, its first line where the badge is', () => {
  const one = nodeBox({ in: 1, out: 1 }, false, false, 1);
  const two = nodeBox({ in: 1, out: 1 }, false, false, 2);
  assert.equal(two.label, one.label); // the badge's line
  assert.equal(two.labelMid, one.label + 8); // X6 centres the two lines there: the first stays put
  assert.equal(two.status, one.status + 16);
  assert.equal(two.height, one.height + 16);
  const meta = nodeMeta({ id: 'n1', kind: 'dataset', parameters: { dataset: 7 } }, { x: 0, y: 0 }, [],
    { modules: MODULES, datasets: new Map([[7, { id: 7, name: 'photos-of-cats-and-dogs-from-the-archive' }]]) });
  assert.equal(meta.attrs.label.text.split('\n').length, 2);
  assert.ok(meta.attrs.status.refY > meta.attrs.label.refY + 8);
});

test('port names: under their circle, apart from their neighbours, in two lines when three share the edge', () => {
  const train = { inputs: ['Untrained model', 'Training dataset', 'Validation dataset'].map((label, i) => ({ name: `p${i}`, label, type: 'T' })), outputs: [{ name: 'm', label: 'Trained model', type: 'M' }] };
  const items = portItems(train, 'n1', []);
  assert.deepEqual(items.map((p) => p.attrs.text.text), ['Untrained\nmodel', 'Training\ndataset', 'Validation\ndataset', 'Trained model']);
  assert.deepEqual(items.map((p) => p.args.y), [0, 0, 0, '100%']);
  const xs = items.slice(0, 3).map((p) => p.args.x);
  for (let i = 0; i < 3; i += 1) {
    for (const line of items[i].attrs.text.text.split('\n')) {
      const half = textWidth(line, 10) / 2;
      assert.ok(xs[i] - half > (i ? xs[i - 1] + 30 : 6) && xs[i] + half < (i < 2 ? xs[i + 1] - 30 : NODE_W), line);
    }
  }
  assert.equal(items[3].args.x, portX(0, 1));
  assert.equal(items[0].attrs.text.title, items[0].attrs.circle.title);
  assert.deepEqual(nameLines(items), { in: 2, out: 1 });
});

test('a node is as tall as its port names, bound parameters and progress line need', () => {
  const plain = nodeBox({ in: 0, out: 0 }, false, false);
  assert.deepEqual([plain.height, plain.label, plain.status], [NODE_H, 19, 37]);
  assert.equal(nodeBox({ in: 0, out: 0 }, true, false).height, NODE_H_BOUND);
  const full = nodeBox({ in: 2, out: 1 }, true, true);
  // two lines of input names, label, status, progress, bindings, a line of output names
  assert.equal(full.height, 24 + 16 + 18 + PROGRESS_H + 16 + 13 + 11 + 6);
  assert.ok(full.label - 8 > 24 && full.status > full.label && full.progress > full.status && full.bindings > full.progress);
  assert.ok(full.bindings + 6 <= full.height - 17); // above the output names
});

test('a node and a link as X6 cells', () => {
  const meta = nodeMeta({ id: 'n1', kind: 'source', parameters: { value: 1 } }, { x: 5, y: 6 }, [], catalogue);
  assert.equal(meta.shape, NODE_SHAPE);
  assert.deepEqual([meta.id, meta.x, meta.y, meta.data], ['n1', 5, 6, { kind: 'source', parameters: { value: 1 } }]);
  assert.equal(meta.attrs.body.title, 'Source');
  assert.equal(meta.height, 37 + 13 + 11 + 6); // one line of output names under the status
  assert.equal(meta.attrs.labelTip.title, 'Source');
  assert.deepEqual(edgeMeta(link('e1', 'n1', 'images', 'n2', 'images')).source, { cell: 'n1', port: 'out:images' });
  assert.deepEqual(pastedEdgeMeta({ from: 'n4', fromPort: 'out:images', to: 'n5', toPort: 'in:images' }).target, { cell: 'n5', port: 'in:images' });
});
