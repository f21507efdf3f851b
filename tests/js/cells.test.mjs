import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NODE_SHAPE, edgeMeta, nodeLabel, nodeMeta, pastedEdgeMeta, portItems, shorten } from '../../static/js/cells.js';
import { MODULES, link } from './fixtures.mjs';

const catalogue = { modules: MODULES, datasets: new Map([[12, { id: 12, name: 'digits' }]]) };

test('a node shows its module, a dataset node its dataset, an unknown kind says so', () => {
  assert.equal(nodeLabel({ kind: 'source' }, MODULES.get('source'), catalogue.datasets), 'Source');
  assert.equal(nodeLabel({ kind: 'dataset', parameters: { dataset: 12 } }, MODULES.get('dataset'), catalogue.datasets), 'Dataset: digits');
  assert.equal(nodeLabel({ kind: 'dataset', parameters: { dataset: 13 } }, MODULES.get('dataset'), catalogue.datasets), 'Dataset');
  assert.equal(nodeLabel({ kind: 'gone' }, undefined, catalogue.datasets), 'gone (unknown module)');
});

test('long labels are cut', () => {
  assert.equal(shorten('a'.repeat(26)), 'a'.repeat(26));
  assert.equal(shorten('a'.repeat(27)), `${'a'.repeat(25)}…`);
});

test('ports: the declared ones, then in red any a link names that the module lacks', () => {
  const items = portItems(MODULES.get('train'), 'n3', [link('e1', 'n1', 'images', 'n3', 'extra'), link('e2', 'n3', 'model', 'n4', 'x')]);
  assert.deepEqual(items.map((p) => p.id), ['in:model', 'in:data', 'out:model', 'in:extra']);
  assert.equal(items[0].attrs.circle.title, 'Model (UntrainedModel)');
  assert.equal(items[3].attrs.circle.title, 'extra (not declared by this module)');
  const optional = portItems(MODULES.get('zip'), 'n4', []);
  assert.equal(optional[0].attrs.circle.title, 'Anything (AnyDirectory, optional)');
  assert.deepEqual(portItems(undefined, 'n5', [link('e', 'n5', 'out', 'n2', 'images')]).map((p) => p.id), ['out:out']);
  const fineTune = { inputs: [{ name: 'm', label: 'Model', type: 'Untrained', accepts: ['Untrained', 'Trained'], help: 'or a trained one' }], outputs: [] };
  assert.equal(portItems(fineTune, 'n6', [])[0].attrs.circle.title, 'Model (Untrained or Trained): or a trained one');
});

test('a node and a link as X6 cells', () => {
  const meta = nodeMeta({ id: 'n1', kind: 'source', parameters: { value: 1 } }, { x: 5, y: 6 }, [], catalogue);
  assert.equal(meta.shape, NODE_SHAPE);
  assert.deepEqual([meta.id, meta.x, meta.y, meta.data], ['n1', 5, 6, { kind: 'source', parameters: { value: 1 } }]);
  assert.equal(meta.attrs.body.title, 'Source');
  assert.deepEqual(edgeMeta(link('e1', 'n1', 'images', 'n2', 'images')).source, { cell: 'n1', port: 'out:images' });
  assert.deepEqual(pastedEdgeMeta({ from: 'n4', fromPort: 'out:images', to: 'n5', toPort: 'in:images' }).target, { cell: 'n5', port: 'in:images' });
});
