import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { ANY_DIRECTORY, acceptedText, accepts, declaredPort, moduleOf, reaches, refusal } from '../../static/js/rules.js';
import { MODULES, ROOT, link } from './fixtures.mjs';

const nodes = new Map([['n1', { id: 'n1', kind: 'source' }], ['n2', { id: 'n2', kind: 'resize' }],
  ['n3', { id: 'n3', kind: 'train' }], ['n4', { id: 'n4', kind: 'zip' }], ['n5', { id: 'n5', kind: 'gone' }]]);

test('an input accepts its own type, and AnyDirectory accepts every type', () => {
  assert.ok(accepts('ImageDirectory', 'ImageDirectory'));
  assert.ok(accepts('Model', ANY_DIRECTORY));
  assert.ok(!accepts('ImageDirectory', 'UntrainedModel'));
  assert.ok(!accepts(ANY_DIRECTORY, 'Model'));
});

test('ports are looked up on their side', () => {
  assert.equal(declaredPort(MODULES.get('train'), 'in', 'model').type, 'UntrainedModel');
  assert.equal(declaredPort(MODULES.get('train'), 'out', 'data'), null);
  assert.equal(declaredPort(undefined, 'in', 'x'), null);
});

test('a link between types that differ is refused, saying which', () => {
  const l = link('e1', 'n1', 'images', 'n3', 'model');
  assert.equal(refusal(MODULES, nodes, [l], l),
    'Cannot connect Source\'s output "Images" to Train\'s input "Model": the output gives ImageDirectory, and Model takes only UntrainedModel.');
  const ok = link('e2', 'n1', 'images', 'n3', 'data');
  assert.equal(refusal(MODULES, nodes, [ok], ok), '');
  const anything = link('e3', 'n3', 'model', 'n4', 'anything');
  assert.equal(refusal(MODULES, nodes, [anything], anything), '');
});

test('an input fed twice is refused', () => {
  const first = link('e1', 'n1', 'images', 'n2', 'images');
  const second = link('e2', 'n1', 'images', 'n2', 'images');
  assert.equal(refusal(MODULES, nodes, [first, second], second), 'Input "Images" of Resize is already connected: delete that link first.');
  assert.equal(refusal(MODULES, nodes, [first], first), '');
});

test('a link that closes a cycle is refused', () => {
  const links = [link('e1', 'n2', 'images', 'n4', 'anything'), link('e2', 'n1', 'images', 'n2', 'images')];
  assert.ok(reaches(links, 'n1', 'n4'));
  assert.ok(!reaches(links, 'n4', 'n1'));
  const back = link('e3', 'n2', 'images', 'n2', 'images');
  assert.match(refusal(MODULES, nodes, links, back), /already connected/);
  const loop = link('e4', 'n4', 'images', 'n1', 'images');
  const withLoop = [...links, loop];
  assert.equal(refusal(MODULES, new Map([...nodes, ['n1', { id: 'n1', kind: 'resize' }]]), withLoop, loop),
    'Cannot connect Zip to Resize: the link would make a cycle (Resize already feeds Zip).');
});

test('ports of an unknown module are judged by the server only', () => {
  const l = link('e1', 'n5', 'out', 'n2', 'images');
  assert.equal(refusal(MODULES, nodes, [l], l), '');
  const unknownEnd = link('e2', 'n1', 'images', 'n9', 'x');
  assert.equal(refusal(MODULES, nodes, [unknownEnd], unknownEnd), '');
});

test('an input that declares other accepted types takes them too, and a refusal names them all', () => {
  const also = ['UntrainedModelDirectory', 'ModelDirectory'];
  assert.ok(accepts('ModelDirectory', 'UntrainedModelDirectory', also));
  assert.ok(!accepts('ImageDirectory', 'UntrainedModelDirectory', also));
  assert.ok(!accepts('ModelDirectory', 'UntrainedModelDirectory'));
  assert.equal(acceptedText({ type: 'ImageDirectory' }), 'ImageDirectory');
  assert.equal(acceptedText({ type: 'UntrainedModelDirectory', accepts: also }), 'UntrainedModelDirectory or ModelDirectory');
});

// the real catalogue, as the page gets it, when the server's Python is here
const python = `${ROOT}.venv/bin/python`;
const catalogue = existsSync(python) ? new Map(JSON.parse(execFileSync(python, ['-c',
  'import json; from modules import catalogue; print(json.dumps(catalogue.load().describe()))'], { cwd: ROOT, encoding: 'utf8' }))
  .map((m) => [m.kind, m])) : null;

test('a trained model feeds Train PyTorch Model to fine-tune, an image directory still does not', { skip: !catalogue }, () => {
  const canvas = new Map([['t1', { id: 't1', kind: 'train_pytorch_model' }], ['t2', { id: 't2', kind: 'train_pytorch_model' }],
    ['s', { id: 's', kind: 'split_image_directory' }]]);
  const fineTune = link('e1', 't1', 'trained_model', 't2', 'untrained_model');
  assert.equal(refusal(catalogue, canvas, [fineTune], fineTune), '');
  const images = link('e2', 's', 'results_dataset1', 't2', 'untrained_model');
  assert.equal(refusal(catalogue, canvas, [images], images),
    'Cannot connect Split Image Directory\'s output "Results dataset1" to Train PyTorch Model\'s input "Untrained model": '
    + 'the output gives images with a labels index, and Untrained model takes only an untrained PyTorch model and its settings '
    + 'or a trained model with its classes and transforms.');
  // two nodes of one module: told apart by their ids
  const asData = link('e3', 't1', 'trained_model', 't2', 'training_dataset');
  assert.match(refusal(catalogue, canvas, [asData], asData),
    /^Cannot connect Train PyTorch Model \(t1\)'s output "Trained model" to Train PyTorch Model \(t2\)'s .* takes only images with a labels index\.$/);
});

test('a node pinned to an earlier version of a component is drawn and checked with that version', () => {
  const port = (name, type) => ({ name, label: name, type });
  const v2 = { kind: 'my_train', version: 2, label: 'My train', inputs: [port('images', 'ImageDirectory')], outputs: [port('model', 'Model')] };
  const v1 = { kind: 'my_train', version: 1, label: 'My train', inputs: [port('data', 'AnyDirectory')], outputs: [port('out', 'AnyDirectory')] };
  const modules = Object.assign(new Map([...MODULES, ['my_train', v2]]), { earlier: new Map([['my_train@1', v1]]) });
  assert.equal(moduleOf(modules, { kind: 'my_train', version: 1 }), v1);
  assert.equal(moduleOf(modules, { kind: 'my_train', version: 2 }), v2);
  assert.equal(moduleOf(modules, { kind: 'my_train' }), v2); // a new node: the latest
  assert.equal(moduleOf(MODULES, { kind: 'train', version: 1 }), MODULES.get('train')); // a plain Map: built-in modules
  const pinned = new Map([['n1', { id: 'n1', kind: 'source' }], ['n2', { id: 'n2', kind: 'my_train', version: 1 }],
    ['n3', { id: 'n3', kind: 'resize' }]]);
  const toData = link('e1', 'n1', 'images', 'n2', 'data');
  assert.equal(refusal(modules, pinned, [toData], toData), ''); // v1's input, which v2 no longer has
  const fromOut = link('e2', 'n2', 'out', 'n3', 'images');
  assert.match(refusal(modules, pinned, [fromOut], fromOut), /output "out" to Resize.s input "Images": the output gives AnyDirectory/);
});
