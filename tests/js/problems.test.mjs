import assert from 'node:assert/strict';
import { test } from 'node:test';
import { problemMarks } from '../../static/js/problems.js';

test('problems are grouped by node, by input port and by link', () => {
  const marks = problemMarks([
    { node: 'n1', message: 'value: too big', text: 'Source (n1): value: too big', param: 'value' },
    { node: 'n2', port: 'images', message: 'required input is not connected' },
    { message: 'a cycle', link: 'e3', node: 'n2' },
    { message: 'the pipeline is empty' },
  ]);
  assert.deepEqual([...marks.byNode], [['n1', ['Source (n1): value: too big']], ['n2', ['required input is not connected', 'a cycle']]]);
  assert.deepEqual([...marks.ports], [['n2|images', 'required input is not connected']]);
  assert.deepEqual([...marks.links], ['e3']);
});
