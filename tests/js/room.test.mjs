import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeRoom } from '../../static/js/room.js';

const box = (id, x, y, h = 60) => ({ id, x, y, w: 200, h });

test('a node that grows over the one under it pushes it down, and that one the next', () => {
  // train at y 100, 60 tall, grows to 76; score 10 px under it, evaluate 10 px under score
  const grown = { ...box('train', 0, 100, 76), was: 60 };
  const moves = makeRoom(grown, [box('train', 0, 100), box('score', 0, 170), box('evaluate', 0, 240), box('aside', 400, 170)]);
  // score to 100 + 76 + 12 = 188; evaluate then to 188 + 60 + 12 = 260
  assert.deepEqual(moves, [{ id: 'score', dy: 18 }, { id: 'evaluate', dy: 20 }]);
});

test('a node far enough below, beside, or above does not move', () => {
  const grown = { ...box('train', 0, 100, 76), was: 60 };
  assert.deepEqual(makeRoom(grown, [box('far', 0, 300), box('beside', 250, 150), box('above', 0, 10)]), []);
});
