import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ANY_DIRECTORY, accepts, declaredPort, reaches, refusal } from '../../static/js/rules.js';
import { MODULES, link } from './fixtures.mjs';

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
    'Cannot connect Source (n1) output "Images" (ImageDirectory) to Train (n3) input "Model" (UntrainedModel): '
    + 'the types differ; Model accepts only UntrainedModel.');
  const ok = link('e2', 'n1', 'images', 'n3', 'data');
  assert.equal(refusal(MODULES, nodes, [ok], ok), '');
  const anything = link('e3', 'n3', 'model', 'n4', 'anything');
  assert.equal(refusal(MODULES, nodes, [anything], anything), '');
});

test('an input fed twice is refused', () => {
  const first = link('e1', 'n1', 'images', 'n2', 'images');
  const second = link('e2', 'n1', 'images', 'n2', 'images');
  assert.equal(refusal(MODULES, nodes, [first, second], second), 'Input "Images" of Resize (n2) is already connected: delete that link first.');
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
    'Cannot connect Zip (n4) to Resize (n1): the link would make a cycle (Resize (n1) already feeds Zip (n4)).');
});

test('ports of an unknown module are judged by the server only', () => {
  const l = link('e1', 'n5', 'out', 'n2', 'images');
  assert.equal(refusal(MODULES, nodes, [l], l), '');
  const unknownEnd = link('e2', 'n1', 'images', 'n9', 'x');
  assert.equal(refusal(MODULES, nodes, [unknownEnd], unknownEnd), '');
});
