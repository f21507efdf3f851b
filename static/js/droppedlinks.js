/* What happens to a link the user lets go of without joining it to an input. X6 takes it away;
 * dropped by an input that refuses it, the user is told why; dropped on the blank canvas (dragged
 * away from its port, as in ComfyUI), the quick search asks what to add there, fed from that output. */

const DROP_DISTANCE = 30; // px a link is dragged from its port before a drop on the blank canvas asks what to add

/** The inputs a link being drawn came near, and why each refuses it ('' if it accepts it). */
export function refusalsNear(radius = 24) {
  let edge = null;
  let seen = new Map(); // magnet -> {view, why}
  return {
    note(e, view, magnet, why) {
      if (e !== edge) { edge = e; seen = new Map(); }
      if (view && magnet) seen.set(magnet, { view, why });
    },
    /** Why the input nearest the point (within the snap radius) refuses the link, or ''. */
    at(e, point) {
      if (e !== edge || !point) return '';
      let best = null;
      let min = radius;
      for (const [magnet, { view, why }] of seen) {
        if (!magnet.isConnected) continue;
        const d = view.getBBoxOfElement(magnet).getCenter().distance(point);
        if (d < min) { min = d; best = why; }
      }
      return best || '';
    },
  };
}

/**
 * graph: the X6 graph; drawing: the links being drawn (WeakSet); near: refusalsNear(); onRefusal(text);
 * onDropped({node, port, at}) for a link from output `port` of `node` let go of at `at` (local).
 */
export function watchDroppedLinks(graph, drawing, near, onRefusal, onDropped) {
  graph.on('edge:removed', ({ edge }) => {
    if (!drawing.has(edge)) return;
    const at = edge.getTargetPoint();
    const why = near.at(edge, at);
    if (why) { onRefusal(why); return; }
    const source = graph.getCellById(edge.getSourceCellId()); // a removed edge finds no cell itself
    const view = source && graph.findViewByCell(source);
    const magnet = view && view.container.querySelector(`[port="${edge.getSourcePortId()}"]`);
    const dragged = magnet && view.getBBoxOfElement(magnet).getCenter().distance(at) > DROP_DISTANCE;
    if (dragged && !graph.getNodes().some((n) => n.getBBox().containsPoint(at))) {
      onDropped({ node: source, port: edge.getSourcePortId(), at: { x: at.x, y: at.y } });
    }
  });
}
