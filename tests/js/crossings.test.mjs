import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crosses } from '../../static/js/crossings.js';

test('a link crosses a module when a point of it lies inside the module\'s box', () => {
  const train = { x: 100, y: 200, width: 200, height: 88 };
  assert.ok(crosses([{ x: 150, y: 100 }, { x: 150, y: 250 }], [train]));
  assert.ok(!crosses([{ x: 50, y: 250 }, { x: 320, y: 250 }], [train])); // beside it
  assert.ok(!crosses([{ x: 100, y: 250 }], [train])); // on its edge: not behind it
  assert.ok(!crosses([], [train]));
});
