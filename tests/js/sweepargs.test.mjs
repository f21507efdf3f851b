import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scriptArguments } from '../../static/js/sweepargs.js';
import { configToForm, defaultForm, fixedValues } from '../../static/js/sweepconfig.js';

// the azureml_run_logging example as GET /api/modules describes it: its command passes
// --learning_rate {params.learning_rate} and --epochs {params.epochs}
const SCRIPT = {
  kind: 'azureml_run_logging', label: 'Azure ML Run logging (script)',
  params: [
    { name: 'learning_rate', label: 'Learning rate', type: 'float', default: 0.1, min: 0, max: 10, min_exclusive: true, max_exclusive: false, help: '' },
    { name: 'epochs', label: 'Epochs', type: 'int', default: 5, min: 1, max: 1000, min_exclusive: false, max_exclusive: false, help: '' },
    { name: 'solver', label: 'Solver', type: 'choice', choices: ['sgd', 'adam'], default: 'sgd', help: '' },
  ],
  component: { arguments: { '--learning_rate': 'learning_rate', '--epochs': 'epochs', '--solver': 'solver' } },
};
const modules = new Map([[SCRIPT.kind, SCRIPT], ['dataset', { kind: 'dataset', params: [] }]]);

test('a sweep may name the script arguments of the components on the canvas, typed and ranged from their parameters', () => {
  const nodes = [{ kind: 'dataset' }, { kind: SCRIPT.kind, parameters: { learning_rate: 0.05 } }, { kind: SCRIPT.kind, parameters: { learning_rate: 0.3 } }];
  const found = scriptArguments(nodes, modules);
  assert.deepEqual(found.map((a) => [a.name, a.type, a.default]), [['--learning_rate', 'float', 0.05], ['--epochs', 'int', 5], ['--solver', 'string', 'sgd']]);
  assert.equal(found[0].min, undefined); // exclusive 0 for a float: no inclusive bound to offer
  assert.deepEqual([found[1].min, found[1].max], [1, 1000]);
  assert.ok(found.every((a) => a.argument));
  assert.deepEqual(scriptArguments([{ kind: 'dataset' }], modules), []);
});

test('an argument the YAML sweeps is typed in the form, and one left unswept sends no value (the node keeps its own)', () => {
  const params = [{ name: 'lr', type: 'float', default: 0.01 }, ...scriptArguments([{ kind: SCRIPT.kind }], modules)];
  const config = { sampling: 'random', parameter_space: [{ name: '--learning_rate', expression: 'uniform', values: [0.01, 0.5] }] };
  const form = configToForm(config, params);
  assert.deepEqual(form.rows.map((r) => [r.name, r.type, r.swept]),
    [['--learning_rate', 'float', true], ['lr', 'float', false], ['--epochs', 'int', false], ['--solver', 'string', false]]);
  assert.deepEqual(fixedValues(form), { lr: 0.01 });
  const fresh = defaultForm(params, ['accuracy']);
  assert.deepEqual(fresh.rows.filter((r) => r.swept).map((r) => r.name), ['lr']); // arguments wait to be ticked
});
