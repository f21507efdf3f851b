import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freeName } from '../../static/js/upload.js';

test('a name nobody has is kept; a taken one gets the first free number', () => {
  assert.equal(freeName('digits', ['pets']), 'digits');
  assert.equal(freeName('digits', ['digits']), 'digits 2');
  assert.equal(freeName('digits', ['digits', 'digits 2', 'digits 3']), 'digits 4');
  assert.equal(freeName('digits', ['digits', 'digits 3']), 'digits 2');
});
