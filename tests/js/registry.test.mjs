import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeLabel } from '../../static/js/cells.js';
import { curlShown, maskKey, metricRows, msText, parseTags, registrableOutputs, registryPaths, safeName, sizeText, tagTexts } from '../../static/js/registry.js';

test("a pipeline's name becomes a usable model name", () => {
  const rule = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/; // registry.py's
  for (const [given, want] of [['Digits example', 'Digits-example'], ['  résumé: v2!  ', 'resume-v2'], ['_x', 'x'],
    ['---', 'model'], ['', 'model'], ['a.b_c-d', 'a.b_c-d'], ['Pipeline (copy)', 'Pipeline-copy']]) {
    assert.equal(safeName(given), want);
    assert.match(safeName(given), rule);
  }
  const long = safeName(`${'a'.repeat(99)} b`);
  assert.equal(long.length, 99);
  assert.match(long, rule);
});

test('tags are typed as key=value, by commas or lines; a bad entry is named', () => {
  assert.deepEqual(parseTags(''), { tags: {} });
  assert.deepEqual(parseTags('dataset=digits, stage = test\nowner=me'), { tags: { dataset: 'digits', stage: 'test', owner: 'me' } });
  assert.deepEqual(parseTags('a=b=c'), { tags: { a: 'b=c' } });
  assert.deepEqual(parseTags('a=b, oops'), { error: 'Tag "oops" is not of the form key=value.' });
  assert.deepEqual(parseTags('=x'), { error: 'Tag "=x" is not of the form key=value.' });
  assert.deepEqual(tagTexts({ stage: 'test', a: '1' }), ['a=1', 'stage=test']);
});

test('a key is masked but for its last four characters, in the curl example too', () => {
  assert.equal(maskKey('abcdefghijkl'), '••••••••ijkl');
  assert.equal(maskKey(''), '');
  const curl = "curl -H 'Authorization: Bearer abcdefghijkl' URL";
  assert.equal(curlShown(curl, { primary: 'abcdefghijkl', secondary: 'zzzz9999' }, false), "curl -H 'Authorization: Bearer ••••••••ijkl' URL");
  assert.equal(curlShown(curl, { primary: 'abcdefghijkl' }, true), curl);
});

test('metrics, sizes and latencies read as a user expects', () => {
  assert.deepEqual(metricRows({ best_epoch: 7, validation_loss: 0.123456, validation_top1_accuracy: 0.9712 }),
    [['Best epoch', '7'], ['Validation loss', '0.1235'], ['Top-1 accuracy (validation)', '97.12%']]);
  assert.deepEqual(metricRows({}), []);
  assert.deepEqual(metricRows(undefined), []);
  assert.equal(sizeText(3 * 2 ** 20 + 1), '3.0 MB');
  assert.equal(sizeText(2048), '2 KB');
  assert.equal(sizeText(0), '');
  assert.equal(msText(null), '—');
  assert.equal(msText(3.14159), '3.1 ms');
  assert.equal(msText(42.7), '43 ms');
});

test('names are encoded in the paths', () => {
  assert.equal(registryPaths.version('a b', 2), '/api/models/a%20b/versions/2');
  assert.equal(registryPaths.endpointPage('digits'), '/endpoints/digits/');
});

test("a registered model's node is labelled with the model it reads", () => {
  const module = { kind: 'registered_model', label: 'Registered model' };
  assert.equal(nodeLabel({ kind: 'registered_model', parameters: { model: 'digits' } }, module, new Map()), 'Registered model: digits');
  assert.equal(nodeLabel({ kind: 'registered_model', parameters: {} }, module, new Map()), 'Registered model');
});

test("Train's and Export's model, and a component's outputs declared as a model, are offered to register", () => {
  assert.deepEqual(registrableOutputs('train_pytorch_model', null), [null]);
  assert.deepEqual(registrableOutputs('export_to_onnx', { outputs: [] }), [null]);
  assert.deepEqual(registrableOutputs('score_image_model', { outputs: [{ name: 'scored_dataset', type: 'ScoredDataset' }] }), []);
  assert.deepEqual(registrableOutputs('registered_model', { outputs: [{ name: 'trained_model', type: 'ModelDirectory' }] }), []);
  const component = { component: { origin: 'examples' }, outputs: [{ name: 'model', label: 'Model', type: 'ModelDirectory' },
    { name: 'report', label: 'Report', type: 'AnyDirectory' }, { name: 'onnx', type: 'OnnxModel' }] };
  assert.deepEqual(registrableOutputs('pytorch_score_train', component), [{ name: 'model', label: 'Model' }, { name: 'onnx', label: 'onnx' }]);
  // an MLflow model the script logged without declaring an output: made for the node (issue 43)
  assert.deepEqual(registrableOutputs('mlflow_pytorch_train', { component: {}, outputs: [] }, ['mlflow_model']),
    [{ name: 'mlflow_model', label: 'mlflow_model' }]);
  assert.deepEqual(registrableOutputs('pytorch_score_train', component, ['model', 'report', 'onnx']).length, 2);
  assert.deepEqual(registrableOutputs('score_image_model', { outputs: [] }, ['scored_dataset']), []);
});

test("a component's model shows the last value of each metric it logged", () => {
  assert.deepEqual(metricRows({ val_acc: 0.9612345678, loss: 0.25, note: 'x' }), [['loss', '0.25'], ['val_acc', '0.961235']]);
  assert.deepEqual(metricRows({ best_epoch: 3, loss: 0.25 }), [['Best epoch', '3']]);  // a training's: its best epoch's
});
