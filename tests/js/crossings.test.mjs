import assert from 'node:assert/strict';
import { test } from 'node:test';
import { around, crosses, elbow, smoothPoints } from '../../static/js/crossings.js';

test('a link crosses a module when a point of it lies inside the module\'s box', () => {
  const train = { x: 100, y: 200, width: 200, height: 88 };
  assert.ok(crosses([{ x: 150, y: 100 }, { x: 150, y: 250 }], [train]));
  assert.ok(!crosses([{ x: 50, y: 250 }, { x: 320, y: 250 }], [train])); // beside it
  assert.ok(!crosses([{ x: 100, y: 250 }], [train])); // on its edge: not behind it
  assert.ok(!crosses([], [train]));
});

test('the curve a link would have is sampled between its ends, through the middle of the two', () => {
  const points = smoothPoints({ x: 0, y: 0 }, { x: 100, y: 200 });
  assert.equal(points.length, 9);
  assert.deepEqual(points[4], { x: 50, y: 100 }); // halfway: the middle of the two ends
  assert.ok(points.every((p, i) => i === 0 || p.y > points[i - 1].y)); // downwards all along
  // a module straight between a source and a target below it is crossed; one beside them is not
  const between = { x: -50, y: 80, width: 100, height: 40 };
  const beside = { x: 200, y: 80, width: 100, height: 40 };
  const straight = smoothPoints({ x: 0, y: 0 }, { x: 0, y: 200 });
  assert.ok(crosses(straight, [between]) && !crosses(straight, [beside]));
});

test('a link the router finds no way for goes down, across halfway, and down into its target', () => {
  assert.deepEqual(elbow({ x: 0, y: 0 }, { x: 100, y: 201 }), [{ x: 0, y: 101 }, { x: 100, y: 101 }]);
  assert.deepEqual(elbow({ x: 40, y: 0 }, { x: 40, y: 200 }), []); // straight down: no corner
});

test('a link with no route goes around the modules between its ends, by the nearer side, past any beside them', () => {
  // digits.json: Apply (validation) at x 320 feeds Score 22 px under Train, which stands between
  const train = { x: 320, y: 440, width: 200, height: 88 };
  const route = around({ x: 420, y: 418 }, { x: 470, y: 550 }, [train]);
  assert.deepEqual(route, [{ x: 420, y: 430 }, { x: 532, y: 430 }, { x: 532, y: 538 }, { x: 470, y: 538 }]);
  assert.ok(!crosses(route, [train]));
  // a module right of Train as well: the column goes past it
  const beside = { x: 530, y: 450, width: 200, height: 60 };
  assert.equal(around({ x: 420, y: 418 }, { x: 470, y: 550 }, [train, beside])[1].x, 742);
  // nothing between: down, across halfway, down
  assert.deepEqual(around({ x: 0, y: 0 }, { x: 100, y: 201 }, [train]), elbow({ x: 0, y: 0 }, { x: 100, y: 201 }));
});
