import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorOf, paths } from '../../static/js/api.js';

test('a node id is encoded in the URLs about it', () => {
  assert.equal(paths.node(3, 'a b/c'), '/api/runs/3/nodes/a%20b%2Fc');
  assert.equal(paths.visualize(3, 'n1'), '/runs/3/nodes/n1/visualize');
  assert.equal(paths.runs(9), '/api/pipelines/9/runs');
});

test('the socket follows the page: wss under https, resumed after the last event', () => {
  assert.equal(paths.socket({ protocol: 'https:', host: 'x.org' }, 5, 12), 'wss://x.org/ws/runs/5/?after=12');
  assert.equal(paths.socket({ protocol: 'http:', host: '127.0.0.1:8000' }, 5, 0), 'ws://127.0.0.1:8000/ws/runs/5/?after=0');
});

test("the server's error, or a fallback", () => {
  assert.equal(errorOf({ data: { error: 'no' } }, 'x'), 'no');
  assert.equal(errorOf({ data: null }, 'x'), 'x');
});
