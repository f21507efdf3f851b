import test from 'node:test';
import assert from 'node:assert/strict';

import { targetOptions } from '../../static/js/computetarget.js';
import { editedData, schemaVersion } from '../../static/js/document.js';

const TARGETS = [{ name: 'cpu', live: 2 }, { name: 'gpu', live: 1 }, { name: 'tpu', live: 0 }];

test('a target select offers the fallback, each target with its live workers, and a chosen one no worker joined', () => {
  assert.deepEqual(targetOptions(TARGETS, 'gpu').map((o) => [o.value, o.label, o.selected]), [
    ['', 'Any worker', false], ['cpu', 'cpu (2 live workers)', false], ['gpu', 'gpu (1 live worker)', true],
    ['tpu', 'tpu (no live workers)', false]]);
  assert.equal(targetOptions(TARGETS, '')[0].selected, true);
  assert.deepEqual(targetOptions([], 'old').map((o) => [o.value, o.label, o.selected]), [
    ['', 'Any worker', false], ['old', 'old (not found: no worker joined it)', true]]);
});

test('a module\'s compute target is a name in its run settings, and none chosen leaves none', () => {
  const data = { kind: 'train', run_settings: { node_count: 2 } };
  const field = (value) => ({ runSetting: 'compute_target', type: 'str', value });
  assert.deepEqual(editedData(data, field('gpu')).run_settings, { node_count: 2, compute_target: 'gpu' });
  assert.deepEqual(editedData({ ...data, run_settings: { compute_target: 'gpu' } }, field('')).run_settings, undefined);
  assert.deepEqual(editedData(editedData(data, field('gpu')), field('')).run_settings, { node_count: 2 });
});

test('a draft naming a compute target is schema_version 3', () => {
  assert.equal(schemaVersion({ schema_version: 2 }, [{}]), 2);
  assert.equal(schemaVersion({ schema_version: 2, compute_target: 'cpu' }, [{}]), 3);
  assert.equal(schemaVersion({ schema_version: 1 }, [{ run_settings: { compute_target: 'gpu' } }]), 3);
  assert.equal(schemaVersion({ schema_version: 3 }, [{}]), 3);
});
