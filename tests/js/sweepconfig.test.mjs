import assert from 'node:assert/strict';
import { test } from 'node:test';
import YAML from 'yaml';
import {
  EXPRESSIONS, GOALS, LIMITS, POLICIES, SAMPLINGS, configToForm, configYaml, defaultForm, expressionHint, fixedOf, fixedValues, formToConfig, parseYaml, problemField, rowFor,
} from '../../static/js/sweepconfig.js';

const PARAMS = [
  { name: 'learning_rate', type: 'float', default: 0.001, min: 1e-6, max: 1 },
  { name: 'batch_size', type: 'int', default: 16 },
  { name: 'sync', type: 'bool', default: false },
  { name: 'arch', type: 'string', default: 'resnet18' },
];
const METRICS = ['training_loss', 'validation_top1_accuracy'];

// the brief's example, as a user would write it
const CONFIG = {
  sampling: 'random',
  parameter_space: [
    { name: 'learning_rate', expression: 'loguniform', values: [-9, -2] },
    { name: 'batch_size', expression: 'choice', values: [16, 32] },
  ],
  policy: { type: 'BanditPolicy', evaluation_interval: 1, slack_factor: 0.1, delay_evaluation: 0 },
  primary_metric_name: 'validation_top1_accuracy',
  primary_metric_goal: 'maximize',
  max_total_runs: 8,
  max_concurrent_runs: 2,
  max_duration_minutes: 60,
  seed: 1,
};

test('a new sweep sweeps every parameter, toward the accuracy, with HyperDrive\'s limits', () => {
  const form = defaultForm(PARAMS, METRICS);
  assert.deepEqual(formToConfig(form), {
    sampling: 'random',
    parameter_space: [
      { name: 'learning_rate', expression: 'uniform', values: [1e-6, 1] },
      { name: 'batch_size', expression: 'choice', values: [16] },
      { name: 'sync', expression: 'choice', values: [true, false] },
      { name: 'arch', expression: 'choice', values: ['resnet18'] },
    ],
    policy: { type: 'NoTerminationPolicy' },
    primary_metric_name: 'validation_top1_accuracy',
    primary_metric_goal: 'maximize',
    max_total_runs: 8,
    max_concurrent_runs: 2,
  });
  assert.equal(defaultForm(PARAMS, ['training_loss']).primary_metric_goal, 'minimize');
});

test('config -> form -> config is the same config; a parameter not swept stays in the form, unticked', () => {
  const form = configToForm(CONFIG, PARAMS);
  assert.deepEqual(form.rows.map((r) => [r.name, r.swept, r.expression]),
    [['learning_rate', true, 'loguniform'], ['batch_size', true, 'choice'], ['sync', false, 'choice'], ['arch', false, 'choice']]);
  assert.deepEqual(form.rows[0].fields, { min_value: '-9', max_value: '-2' });
  assert.equal(form.rows[1].fields.values, '16, 32');
  assert.deepEqual(formToConfig(form), CONFIG);
});

test('HyperDrive SDK spellings (RandomParameterSampling, Choice, LogUniform) read as the form\'s', () => {
  const sdk = { ...CONFIG, sampling: 'RandomParameterSampling', parameter_space: [
    { name: 'learning_rate', expression: 'LogUniform', values: [-9, -2] }, { name: 'batch_size', expression: 'Choice', values: [16, 32] }] };
  const form = configToForm(sdk, PARAMS);
  assert.equal(form.sampling, 'random');
  assert.deepEqual(form.rows.slice(0, 2).map((r) => [r.expression, r.fields]),
    [['loguniform', { min_value: '-9', max_value: '-2' }], ['choice', { values: '16, 32' }]]);
  assert.deepEqual(formToConfig(form), CONFIG);
});

test('what the server must name is kept as written: an unknown expression, an undeclared parameter, a typo of a key, a bad number', () => {
  const bad = { ...CONFIG, max_total_run: 3, parameter_space: [{ name: 'nope', expression: 'uniformish', values: [1, 2] }, { name: 'batch_size', expression: 'uniform', values: ['a', 4] }] };
  const form = configToForm(bad, PARAMS);
  const back = formToConfig(form);
  assert.deepEqual(back.parameter_space, bad.parameter_space);
  assert.equal(back.max_total_run, 3);
  form.max_concurrent_runs = '0';
  form.max_duration_minutes = '';
  assert.equal(formToConfig(form).max_concurrent_runs, 0);
  assert.equal('max_duration_minutes' in formToConfig(form), false);
});

test('each expression has its value fields; switching keeps the values of the same name', () => {
  assert.deepEqual(Object.keys(EXPRESSIONS).sort(), ['choice', 'lognormal', 'loguniform', 'normal', 'qlognormal', 'qloguniform', 'qnormal', 'quniform', 'randint', 'uniform']);
  assert.deepEqual(rowFor(PARAMS[0], 'quniform', { low: '0.1', high: '0.5' }), { low: '0.1', high: '0.5', q: '' });
  assert.deepEqual(rowFor(PARAMS[0], 'loguniform'), { min_value: '-9', max_value: '-2' });
  assert.equal(expressionHint('loguniform', { min_value: '-9', max_value: '-2' }), 'e^-9 .. e^-2 (the bounds are exponents)');
  assert.equal(expressionHint('randint', { upper: '4' }), '0 .. 3');
  const form = configToForm({ ...CONFIG, policy: { type: 'BanditPolicy', evaluation_interval: 2, slack_amount: 0.2 } }, PARAMS);
  assert.deepEqual(formToConfig(form).policy, { type: 'BanditPolicy', evaluation_interval: 2, slack_amount: 0.2 });
});

test('YAML: the config written and read back is the same config, HyperDrive-shaped', () => {
  const text = configYaml(CONFIG, YAML);
  assert.match(text, /^sampling: random$/m);
  assert.match(text, /^ {2}- \{ name: learning_rate, expression: loguniform, values: \[ -9, -2 \] \}$/m);
  assert.match(text, /^policy: \{ type: BanditPolicy, evaluation_interval: 1, slack_factor: 0.1, delay_evaluation: 0 \}$/m);
  assert.deepEqual(parseYaml(text, YAML).config, CONFIG);
  // form -> YAML -> form -> config
  const form = configToForm(parseYaml(configYaml(formToConfig(defaultForm(PARAMS, METRICS)), YAML), YAML).config, PARAMS);
  assert.deepEqual(formToConfig(form), formToConfig(defaultForm(PARAMS, METRICS)));
  // a user's own YAML, written by hand
  const hand = 'sampling: grid\nparameter_space:\n  - name: batch_size\n    expression: choice\n    values: [16, 32]\npolicy:\n  type: MedianStoppingPolicy\n  evaluation_interval: 1\nprimary_metric_name: training_loss\nprimary_metric_goal: minimize\nmax_total_runs: 2\nmax_concurrent_runs: 1\n';
  const f = configToForm(parseYaml(hand, YAML).config, PARAMS);
  assert.deepEqual(formToConfig(f), parseYaml(hand, YAML).config);
});

test('YAML that cannot be read says where', () => {
  assert.match(parseYaml('sampling: [random\n', YAML).error, /^line \d+: /);
  assert.match(parseYaml('- a\n- b\n', YAML).error, /must be a mapping/);
});

test('a problem lands on the field its path names', () => {
  const cfg = { parameter_space: [{ name: 'learning_rate' }, { name: 'batch_size' }] };
  assert.equal(problemField({ text: 'parameter_space[1] (batch_size): grid sampling takes choice only, not uniform' }, cfg), 'row:batch_size');
  assert.equal(problemField({ text: 'parameter_space[0]: low 2 is above high 1' }, cfg), 'row:learning_rate');
  assert.equal(problemField({ text: 'max_concurrent_runs: must be at least 1, got 0' }, cfg), 'max_concurrent_runs');
  assert.equal(problemField({ text: 'policy.slack_factor: must be above 0' }, cfg), 'policy');
  assert.equal(problemField({ field: 'primary_metric_name', text: 'unknown metric accuracy2' }, cfg), 'primary_metric_name');
  assert.equal(problemField({ text: 'the sweep cannot start: no worker' }, cfg), '');
  assert.equal(problemField({ text: 'parameter_space: at least one parameter' }, cfg), 'parameter_space');
});

test('the parameters a sweep leaves out keep a value for every trial, typed, and kept through the YAML tab', () => {
  const form = configToForm(CONFIG, PARAMS);
  assert.deepEqual(fixedValues(form), { sync: false, arch: 'resnet18' });
  form.rows[2].fixed = 'true';
  form.rows[3].fixed = 'resnet50';
  const again = configToForm(parseYaml(configYaml(formToConfig(form), YAML), YAML).config, PARAMS, fixedOf(form));
  assert.deepEqual(fixedValues(again), { sync: true, arch: 'resnet50' });
  // a parameter swept in the form is not sent as fixed; untick it and it is, at its default
  const all = defaultForm(PARAMS, METRICS);
  assert.deepEqual(fixedValues(all), {});
  all.rows[1].swept = false;
  assert.deepEqual(fixedValues(all), { batch_size: 16 });
});

test('the form offers the vocabulary of the server\'s JSON Schema of a configuration (static/js/sweepschema.js)', () => {
  assert.deepEqual(SAMPLINGS, ['random', 'grid', 'bayesian']);
  assert.deepEqual(GOALS, ['maximize', 'minimize']);
  assert.deepEqual(EXPRESSIONS.qloguniform, ['min_value', 'max_value', 'q']);
  assert.deepEqual(EXPRESSIONS.choice, ['values']);
  assert.equal(Object.keys(EXPRESSIONS).length, 10);
  assert.deepEqual(POLICIES.TruncationSelectionPolicy, ['evaluation_interval', 'delay_evaluation', 'truncation_percentage', 'stop_grace_seconds']);
  assert.deepEqual(POLICIES.NoTerminationPolicy, []);
  assert.deepEqual(LIMITS, ['max_total_runs', 'max_concurrent_runs', 'max_duration_minutes', 'seed']);
});
