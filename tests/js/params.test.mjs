import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bindable, bindingText, compatibleTypes, followRename, freeName, isCompatible, paramFromModule, paramProblems, parseValue,
  problemsOfParam, rangeText, usesOf, valueProblem, valueProblemsOf, withBinding, withType,
} from '../../static/js/params.js';
import { schemaVersion, nodeDoc } from '../../static/js/document.js';
import { bindingLine, NODE_H, NODE_H_BOUND } from '../../static/js/cells.js';

// Train PyTorch Model's Learning rate and friends, as GET /api/modules describes them
const LR = { name: 'learning_rate', label: 'Learning rate', type: 'float', default: 0.001, min: 0, max: null, min_exclusive: true, max_exclusive: false, help: 'SGD' };
const EPOCHS = { name: 'epochs', label: 'Epochs', type: 'int', default: 5, min: 0, max: 100, min_exclusive: true, max_exclusive: false, help: '' };
const SYNC = { name: 'sync_batchnorm', label: 'Sync BatchNorm', type: 'bool', default: false, help: '' };
const MODE = { name: 'mode', label: 'Mode', type: 'choice', choices: ['fast', 'slow'], default: 'fast', help: '' };
const NOTE = { name: 'note', label: 'Note', type: 'str', default: '', help: '' };
const P = (name, type, extra = {}) => ({ name, type, default: type === 'bool' ? false : type === 'string' ? '' : 1, ...extra });

test('a module parameter binds to pipeline parameters of a compatible type only', () => {
  assert.deepEqual(compatibleTypes('int'), ['int']);
  assert.deepEqual(compatibleTypes('float'), ['float', 'int']);
  assert.deepEqual(compatibleTypes('bool'), ['bool']);
  assert.deepEqual(compatibleTypes('choice'), ['string']);
  assert.deepEqual(compatibleTypes('str'), ['string']);
  const params = [P('lr', 'float'), P('n', 'int'), P('flag', 'bool'), P('s', 'string')];
  assert.deepEqual(bindable(LR, params).map((p) => p.name), ['lr', 'n']); // an int value fits a Float
  assert.deepEqual(bindable(EPOCHS, params).map((p) => p.name), ['n']); // a float does not fit an Int
  assert.deepEqual(bindable(SYNC, params).map((p) => p.name), ['flag']);
  assert.deepEqual(bindable(MODE, params).map((p) => p.name), ['s']);
  assert.deepEqual(bindable(NOTE, params).map((p) => p.name), ['s']);
  assert.equal(isCompatible(EPOCHS, P('x', 'float')), false);
});

test('a new parameter from a module parameter takes its name, type, value and inclusive range', () => {
  assert.deepEqual(paramFromModule(LR, 0.01, []), { name: 'learning_rate', type: 'float', default: 0.01, help: 'SGD' }); // > 0: not inclusive
  assert.deepEqual(paramFromModule(EPOCHS, undefined, ['epochs']), { name: 'epochs_2', type: 'int', default: 5, min: 1, max: 100, help: '' });
  assert.deepEqual(paramFromModule(SYNC, true, []), { name: 'sync_batchnorm', type: 'bool', default: true, help: '' });
  assert.deepEqual(paramFromModule(MODE, 'slow', []), { name: 'mode', type: 'string', default: 'slow', help: '' });
  assert.equal(freeName('9 lives', []), '_9_lives');
  assert.equal(freeName('x', ['x', 'x_2']), 'x_3');
});

test('typed values: numbers as numbers, a bad one as typed, bool from a checkbox', () => {
  assert.equal(parseValue('float', '0.5'), 0.5);
  assert.equal(parseValue('int', ''), null);
  assert.equal(parseValue('int', '1e'), '1e');
  assert.equal(parseValue('bool', 'on', true), true);
  assert.equal(parseValue('string', ' a '), ' a ');
  assert.deepEqual(withType({ name: 'a', type: 'float', default: 2.6, min: 0, max: 9 }, 'int'), { name: 'a', type: 'int', default: 3, min: 0, max: 9 });
  assert.deepEqual(withType({ name: 'a', type: 'float', default: 2.5, min: 0 }, 'string'), { name: 'a', type: 'string', default: '2.5' });
  assert.deepEqual(withType({ name: 'a', type: 'string', default: 'x' }, 'float'), { name: 'a', type: 'float', default: 0 });
  assert.equal(rangeText({ min: 1e-6, max: 1 }), '0.000001 .. 1');
  assert.equal(rangeText({ min: 0 }), '>= 0');
});

test('quick checks name the field: a bad name, a twice-declared name, min above max, a default out of range', () => {
  const a = { name: '1x', type: 'int', default: 1.5, min: 3, max: 2 };
  assert.deepEqual(Object.keys(paramProblems(a, [a])).sort(), ['default', 'max', 'name']);
  assert.match(paramProblems(a, [a]).max, /maximum 2 is below the minimum 3/);
  const b = P('lr', 'float', { min: 0, max: 1 });
  assert.match(paramProblems(b, [b, P('lr', 'int')]).name, /declared twice/);
  assert.equal(valueProblem(b, 2), '2 is above the maximum 1');
  assert.equal(valueProblem(b, 'x'), '"x" is not a number');
  assert.equal(valueProblem(P('e', 'int'), 1.5), '1.5 is not a whole number');
  assert.equal(valueProblem(P('f', 'bool'), true), '');
});

test('the server\'s problems are found by the parameter they name', () => {
  const problems = [
    { code: 'bad_parameter', text: 'pipeline parameter \'learning_rate\': min 2 is above max 1', pipeline_parameter: 'learning_rate' },
    { code: 'unknown_param', text: 'node \'n3\', parameter \'learning_rat\': Train has no parameter \'learning_rat\'', node: 'n3', param: 'learning_rat' },
    { code: 'out_of_range', text: 'node \'n3\': its default 0 is out of range', node: 'n3', param: 'learning_rate', pipeline_parameter: 'learning_rate' },
    { code: 'x', text: 'parameters[1]: name is not valid' },
  ];
  assert.deepEqual(problemsOfParam(problems, 'learning_rate', 0).map((p) => p.code), ['bad_parameter', 'out_of_range']);
  assert.deepEqual(problemsOfParam(problems, 'batch', 1).map((p) => p.code), ['x']);
  assert.deepEqual(valueProblemsOf([{ text: 'learning_rate: 5 is above the maximum 1' }, { text: 'lr: x' }], 'learning_rate').length, 1);
  assert.deepEqual(valueProblemsOf([{ text: 'learning_rate_2: 5' }], 'learning_rate').length, 0);
});

test('bindings: set, unset, shown on the node, and following a renamed or removed parameter', () => {
  const data = { kind: 'train', parameters: { learning_rate: 0.1 } };
  const bound = withBinding(data, 'learning_rate', 'lr');
  assert.deepEqual(bound.bindings, { learning_rate: 'lr' });
  assert.deepEqual(withBinding(bound, 'learning_rate', null), data);
  assert.equal(bindingText({ learning_rate: 'lr', epochs: 'e' }), 'learning_rate=@lr, epochs=@e');
  assert.deepEqual(nodeDoc('n1', bound), { id: 'n1', kind: 'train', parameters: { learning_rate: 0.1 }, bindings: { learning_rate: 'lr' } });
  assert.deepEqual(nodeDoc('n1', { ...data, bindings: {} }), { id: 'n1', kind: 'train', parameters: { learning_rate: 0.1 } });
  const nodes = [{ id: 'a', data: bound }, { id: 'b', data }, { id: 'c', data: withBinding(withBinding(data, 'x', 'lr'), 'y', 'other') }];
  assert.equal(usesOf(nodes, 'lr'), 2);
  assert.deepEqual(followRename(nodes, 'lr', 'rate').map((c) => [c.id, c.data.bindings]),
    [['a', { learning_rate: 'rate' }], ['c', { x: 'rate', y: 'other' }]]);
  assert.deepEqual(followRename(nodes, 'lr', null).map((c) => [c.id, c.data.bindings]), [['a', undefined], ['c', { y: 'other' }]]);
  // a bound node is taller, and its line says what is bound
  assert.deepEqual(bindingLine({ learning_rate: 'lr' }), { text: 'learning_rate=@lr', title: 'learning_rate=@lr', height: NODE_H_BOUND });
  assert.equal(bindingLine({ learning_rate: 'learning_rate', epochs: 'epochs' }).text, '@learning_rate, @epochs');
  assert.equal(bindingLine(undefined).height, NODE_H);
  assert.equal(bindingLine({ learning_rate: 'learning_rate', batch_size: 'batch_size', epochs: 'n' }).text, '@learning_rate, @batch_size,…');
});

test('a draft is schema_version 2 once it declares or binds a parameter', () => {
  assert.equal(schemaVersion({ schema_version: 1 }, [{}]), 1);
  assert.equal(schemaVersion({ schema_version: 1, parameters: [P('a', 'int')] }, []), 2);
  assert.equal(schemaVersion({}, [{ bindings: { a: 'b' } }]), 2);
  assert.equal(schemaVersion({ schema_version: 2, parameters: [] }, []), 2);
});
