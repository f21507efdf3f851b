import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  clipOf, draftExtra, editedData, linkOf, newNodeDoc, newNodeId, nodeData, nodeDoc, paramValue, pastePlan, portName, splitPortId, stepThrough, toDraft,
} from '../../static/js/document.js';
import { MODULES } from './fixtures.mjs';

test('a node leaves out its empty fields', () => {
  assert.deepEqual(nodeDoc('n1', { kind: 'source', parameters: { value: 2 }, run_settings: {}, comment: '', regenerate_output: false }),
    { id: 'n1', kind: 'source', parameters: { value: 2 } });
  assert.deepEqual(nodeDoc('n2', { kind: 'train', run_settings: { node_count: 2 }, comment: 'hi', regenerate_output: true }),
    { id: 'n2', kind: 'train', parameters: {}, run_settings: { node_count: 2 }, comment: 'hi', regenerate_output: true });
});

test('a draft keeps its other fields and rounds the places', () => {
  const extra = draftExtra({ name: 'p', description: 'd', nodes: [1], links: [2], layout: {} });
  assert.deepEqual(extra, { name: 'p', description: 'd' });
  const nodes = [{ id: 'n1', data: { kind: 'source', parameters: {} }, position: { x: 10.4, y: 19.6 } },
    { id: 'n2', data: { kind: 'resize' }, position: { x: 0, y: 100 } }];
  const edges = [{ id: 'e1', source: 'n1', sourcePort: 'out:images', target: 'n2', targetPort: 'in:images' },
    { id: 'e2', source: 'n1', sourcePort: 'out:images', target: undefined, targetPort: undefined }];
  assert.deepEqual(toDraft(extra, nodes, edges), {
    name: 'p', description: 'd', schema_version: 1,
    nodes: [{ id: 'n1', kind: 'source', parameters: {} }, { id: 'n2', kind: 'resize', parameters: {} }],
    links: [{ id: 'e1', from: { node: 'n1', port: 'images' }, to: { node: 'n2', port: 'images' } }],
    layout: { n1: { x: 10, y: 20 }, n2: { x: 0, y: 100 } },
  });
});

test('port ids name the side, and a port name may hold a colon', () => {
  assert.deepEqual(splitPortId('in:a:b'), ['in', 'a:b']);
  assert.equal(portName('out:a:b'), 'a:b');
  assert.equal(linkOf({ id: 'e', source: 'a', sourcePort: 'out:x', target: 'b', targetPort: null }), null);
});

test('a new node takes the next free id above the highest', () => {
  assert.equal(newNodeId([]), 'n1');
  assert.equal(newNodeId(['n1', 'n7', 'x', 'n03']), 'n8');
  assert.equal(newNodeId(['load']), 'n1');
});

test('a new node has its parameters defaults, and a dataset node its dataset', () => {
  assert.deepEqual(newNodeDoc(MODULES.get('source'), ['n1']), { id: 'n2', kind: 'source', parameters: { value: 1 } });
  assert.deepEqual(newNodeDoc(MODULES.get('dataset'), [], '12'), { id: 'n1', kind: 'dataset', parameters: { dataset: 12 } });
});

test('a component node keeps the version it was added with, also through a save', () => {
  const component = { kind: 'my_train', version: 3, component: { origin: 'uploaded' }, params: [] };
  const doc = newNodeDoc(component, []);
  assert.deepEqual(doc, { id: 'n1', kind: 'my_train', parameters: {}, version: 3 });
  assert.equal(nodeDoc('n1', nodeData(doc)).version, 3);
  assert.equal(newNodeDoc(MODULES.get('source'), []).version, undefined); // built-in modules have none
});

test("an Azure ML v2 component's distribution and resources are a new node's Run settings", () => {
  const v2 = { kind: 'cifar', version: 2, component: { origin: 'uploaded', run_settings: { node_count: 2, process_count_per_node: 2 } },
    params: [{ name: 'max_epocs', default: null }, { name: 'lr', default: 0.2 }] };
  assert.deepEqual(newNodeDoc(v2, []), { id: 'n1', kind: 'cifar', parameters: { lr: 0.2 }, version: 2,
    run_settings: { node_count: 2, process_count_per_node: 2 } });
});

test('copy keeps the links between copied nodes only; paste gives new ids and moves on', () => {
  const nodes = [{ doc: { id: 'n1', kind: 'source', parameters: { value: 3 } }, position: { x: 0, y: 0 } },
    { doc: { id: 'n2', kind: 'resize', parameters: {} }, position: { x: 0, y: 100 } }];
  const edges = [{ id: 'e1', source: 'n1', sourcePort: 'out:images', target: 'n2', targetPort: 'in:images' },
    { id: 'e2', source: 'n2', sourcePort: 'out:images', target: 'n3', targetPort: 'in:images' }];
  const clip = clipOf(nodes, edges);
  assert.deepEqual(clip.links, [{ from: 'n1', fromPort: 'out:images', to: 'n2', toPort: 'in:images' }]);
  nodes[0].doc.parameters.value = 99; // the clipboard is a copy
  assert.equal(clip.nodes[0].doc.parameters.value, 3);

  const first = pastePlan(clip, ['n1', 'n2', 'n3']);
  assert.deepEqual(first.nodes.map((n) => [n.doc.id, n.pos]), [['n4', { x: 40, y: 40 }], ['n5', { x: 40, y: 140 }]]);
  assert.deepEqual(first.links, [{ from: 'n4', fromPort: 'out:images', to: 'n5', toPort: 'in:images' }]);
  const second = pastePlan(first.clip, ['n1', 'n2', 'n3', 'n4', 'n5']);
  assert.deepEqual(second.nodes.map((n) => [n.doc.id, n.pos]), [['n6', { x: 80, y: 80 }], ['n7', { x: 80, y: 180 }]]);
  assert.deepEqual(clip.nodes[0].pos, { x: 0, y: 0 }); // the plan does not change the clipboard it was given
});

test('a field value is a number for numbers, kept as typed when it is not one', () => {
  assert.equal(paramValue('int', ' 3 ', false), 3);
  assert.equal(paramValue('float', '', false), null);
  assert.equal(paramValue('float', '1e', false), '1e');
  assert.equal(paramValue('bool', 'on', true), true);
  assert.equal(paramValue('str', ' x ', false), ' x ');
});

test('an edit in the pane changes a copy of the node data', () => {
  const data = { kind: 'train', parameters: { lr: 0.1 } };
  const edited = editedData(data, { param: 'epochs', type: 'int', value: '5' });
  assert.deepEqual(edited, { kind: 'train', parameters: { lr: 0.1, epochs: 5 } });
  assert.deepEqual(data.parameters, { lr: 0.1 });
  assert.deepEqual(editedData(data, { runSetting: 'node_count', value: '2' }).run_settings, { node_count: 2 });
  assert.equal(editedData(data, { runSetting: 'node_count', value: '' }).run_settings.node_count, null);
  assert.equal(editedData(data, { comment: true, value: 'note' }).comment, 'note');
  assert.equal(editedData(data, { regenerate: true, checked: true }).regenerate_output, true);
  assert.equal(editedData(data, { value: 'x' }), null);
});

test('the next module in reading order: rows top to bottom, left to right within a row, round at the ends', () => {
  const items = [{ id: 'train', x: 300, y: 200 }, { id: 'data', x: 0, y: 0 }, { id: 'model', x: 400, y: 10 },
    { id: 'score', x: 100, y: 400 }, { id: 'split', x: 50, y: 215 }];
  const walk = [];
  let id = null;
  for (let i = 0; i < 6; i += 1) { id = stepThrough(items, id, 1); walk.push(id); }
  assert.deepEqual(walk, ['data', 'model', 'split', 'train', 'score', 'data']);
  assert.equal(stepThrough(items, null, -1), 'score');
  assert.equal(stepThrough(items, 'data', -1), 'score');
  assert.equal(stepThrough([], null, 1), null);
});
