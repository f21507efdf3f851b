/* A link that passes behind a module it does not join looked as if it fed that module's ports
 * (issue 30: a link behind Train PyTorch Model, also after Auto-layout). Such a link is drawn over
 * the modules instead, so that it is seen to pass by; the others stay behind them (canvas.js). */
const OVER = 10000; // above every module
const BEHIND = -1; // where links are drawn (canvas.js, LINK_SHAPE)
const RATIOS = [0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85]; // points along the link, its ends left out

/** Whether a point of `points` lies inside one of `boxes` ({x, y, width, height}). */
export function crosses(points, boxes) {
  return points.some((p) => boxes.some((b) => p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height));
}

/** Keeps every link of `graph` over the modules while it passes behind one it does not join. */
export function liftCrossingLinks(graph) {
  let timer = null;
  function update() {
    timer = null;
    const nodes = graph.getNodes().map((n) => ({ id: n.id, box: n.getBBox() }));
    graph.batchUpdate(() => {
      for (const edge of graph.getEdges()) {
        const view = graph.findViewByCell(edge);
        const points = view ? RATIOS.map((r) => view.getPointAtRatio(r)).filter(Boolean) : [];
        const ends = [edge.getSourceCellId(), edge.getTargetCellId()];
        const z = crosses(points, nodes.filter((n) => !ends.includes(n.id)).map((n) => n.box)) ? OVER : BEHIND;
        if (edge.getZIndex() !== z) edge.setZIndex(z, { ignoreHistory: true }); // a drawing matter: not an edit to undo
      }
    });
  }
  // after X6 has drawn the change (its rendering is asynchronous); once for a burst of moves
  const soon = () => { clearTimeout(timer); timer = setTimeout(() => requestAnimationFrame(update), 120); };
  for (const event of ['render:done', 'node:change:position', 'node:added', 'node:removed', 'edge:connected', 'edge:removed']) graph.on(event, soon);
  soon();
  return { update };
}
