/* A link whose curve would pass behind a module it does not join looked as if it fed that
 * module's ports (issue 30: a link behind Train PyTorch Model, also after Auto-layout). Such a link
 * is routed around the modules instead (X6's manhattan router: right angles, rounded corners, a
 * margin around each module); the others keep their smooth curve. Whether a link detours is
 * decided on the curve it would have (smoothPoints), never on its route: the decision is stable. */
const SMOOTH = { name: 'smooth', args: { direction: 'V' } }; // canvas.js's links
/**
 * The route of a link X6's manhattan router finds no way for: there is none while a module stands
 * within the router's margin of one of the link's ends (a module dragged over another; in
 * examples/digits.json, Score Image Model 22 px under Train PyTorch Model). X6 then logged "Unable
 * to execute manhattan algorithm, use orth instead" at every step of a drag (89 console warnings
 * in a walk) and drew its orth route, which ran behind Train PyTorch Model. Instead: down from the
 * source, across to a column clear of the modules (`boxes`) between the two ends' heights, along it,
 * and across to the target, down into it; without such a module, down, across halfway and down.
 */
export function around(from, to, boxes, margin = 12) {
  const top = Math.min(from.y, to.y);
  const bottom = Math.max(from.y, to.y);
  // the modules between the two heights (the link's own ends only touch them: left out)
  const band = boxes.filter((b) => b.y < bottom - 1 && b.y + b.height > top + 1);
  const between = band.filter((b) => b.x < Math.max(from.x, to.x) + margin && b.x + b.width > Math.min(from.x, to.x) - margin);
  if (!between.length) return elbow(from, to);
  const mid = (from.x + to.x) / 2;
  const right = Math.abs(Math.min(...between.map((b) => b.x)) - margin - mid) > Math.abs(Math.max(...between.map((b) => b.x + b.width)) + margin - mid);
  let x = right ? Math.max(...between.map((b) => b.x + b.width)) + margin : Math.min(...between.map((b) => b.x)) - margin;
  // past any other module of the band the column would run through
  for (let hit = band.find((b) => x > b.x - margin && x < b.x + b.width + margin); hit; hit = band.find((b) => x > b.x - margin && x < b.x + b.width + margin)) {
    x = right ? hit.x + hit.width + margin : hit.x - margin;
  }
  const y1 = from.y + margin;
  const y2 = to.y - margin;
  return [{ x: from.x, y: y1 }, { x, y: y1 }, { x, y: y2 }, { x: to.x, y: y2 }];
}

/** Down from `from`, across halfway, down into `to`. */
export function elbow(from, to) {
  if (from.x === to.x) return [];
  const y = Math.round((from.y + to.y) / 2);
  return [{ x: from.x, y }, { x: to.x, y }];
}

/** The router of a detouring link of `graph`: X6's manhattan, else `around` its modules. */
function detourRouter(graph) {
  // X6 hands the route's ends as its Points, and wants Points back
  const fallbackRoute = (from, to) => around(from, to, graph.getNodes().map((n) => n.getBBox()))
    .map(({ x, y }) => Object.assign(from.clone(), { x, y }));
  return { name: 'manhattan', args: { padding: 16, step: 10, startDirections: ['bottom'], endDirections: ['top'], fallbackRoute } };
}
const DETOUR = { connector: { name: 'rounded', args: { radius: 10 } } };
const QUIET = { ignoreHistory: true }; // a drawing matter: not an edit to undo, nor a change to save
const SAMPLES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]; // points along the curve, its ends left out

/** Whether a point of `points` lies inside one of `boxes` ({x, y, width, height}). */
export function crosses(points, boxes) {
  return points.some((p) => boxes.some((b) => p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height));
}

/**
 * Points of the curve X6's smooth connector draws (direction V) from `s` to `t`: a cubic Bezier
 * whose control points stand halfway down, above the source and above the target.
 */
export function smoothPoints(s, t, at = SAMPLES) {
  const y = (s.y + t.y) / 2;
  const c1 = { x: s.x, y };
  const c2 = { x: t.x, y };
  return at.map((r) => {
    const a = (1 - r) ** 3; const b = 3 * (1 - r) ** 2 * r; const c = 3 * (1 - r) * r ** 2; const d = r ** 3;
    return { x: a * s.x + b * c1.x + c * c2.x + d * t.x, y: a * s.y + b * c1.y + c * c2.y + d * t.y };
  });
}

/** Routes every link of `graph` around the modules while its curve would pass behind one it does not join. */
export function routeAroundModules(graph) {
  const router = detourRouter(graph);
  let timer = null;
  function update() {
    timer = null;
    const nodes = graph.getNodes().map((n) => ({ id: n.id, box: n.getBBox() }));
    graph.batchUpdate(() => {
      for (const edge of graph.getEdges()) {
        const view = graph.findViewByCell(edge);
        if (!view || !view.sourcePoint || !view.targetPoint) continue;
        const ends = [edge.getSourceCellId(), edge.getTargetCellId()];
        const others = nodes.filter((n) => !ends.includes(n.id)).map((n) => n.box);
        const detour = crosses(smoothPoints(view.sourcePoint, view.targetPoint), others);
        const now = edge.getRouter();
        if (detour === !!(now && now.name === router.name)) continue;
        if (detour) {
          edge.setRouter(router, QUIET);
          edge.setConnector(DETOUR.connector, QUIET);
        } else {
          edge.removeRouter(QUIET);
          edge.setConnector(SMOOTH, QUIET);
        }
      }
    });
  }
  // after X6 has drawn the change (its rendering is asynchronous); once for a burst of moves
  const soon = () => { clearTimeout(timer); timer = setTimeout(() => requestAnimationFrame(update), 120); };
  for (const event of ['render:done', 'node:change:position', 'node:added', 'node:removed', 'edge:connected', 'edge:removed']) graph.on(event, soon);
  soon();
  return { update };
}
