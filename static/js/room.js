/* Room for a node that grew (a bound parameter's line): the nodes it would now cover, and those
 * they would cover in turn, move down (pure). */

const GAP = 12; // the space kept under a node that grew

const across = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w;

/**
 * grown: {id, x, y, w, h, was} (h: its new height, was: its height before); others: [{id, x, y, w, h}].
 * Answers [{id, dy}]: how far each node must move down. A node that was under the grown one, clear
 * of it, and is now covered (or closer than GAP) moves just enough; what it then covers moves too.
 */
export function makeRoom(grown, others) {
  const boxes = others.filter((o) => o.id !== grown.id).map((o) => ({ ...o }));
  const moved = new Map();
  const queue = [{ ...grown, oldBottom: grown.y + grown.was }];
  for (let steps = 0; queue.length && steps < 10_000; steps += 1) {
    const b = queue.shift();
    const bottom = b.y + b.h;
    for (const o of boxes) {
      if (!across(o, b) || o.y < b.oldBottom || o.y >= bottom + GAP) continue;
      const dy = bottom + GAP - o.y;
      const oldBottom = o.y + o.h;
      o.y += dy;
      moved.set(o.id, (moved.get(o.id) || 0) + dy);
      queue.push({ ...o, oldBottom });
    }
  }
  return [...moved].map(([id, dy]) => ({ id, dy }));
}
