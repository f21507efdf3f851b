// @ts-nocheck: DOM-heavy (X6's MiniMap plugin, a global of a classic script); tsconfig.json checks the pure modules
/* The minimap of the canvas (X6's MiniMap plugin): plain boxes, a click centres the view there,
 * and its viewport frame kept inside it. */

/**
 * X6 draws the map's viewport frame where the view is, past the map's edges when the view is
 * larger than the pipeline or far from it: the frame is cut to the map (a sliver at its edge when
 * the view is off it), and hidden while there is nothing to map. X6's geometry (which its frame
 * drag uses) is left as it is.
 */
function clampFrame(graph, map, el) {
  const frame = map.viewport;
  const draw = Object.getPrototypeOf(map).updateViewport.bind(map);
  const MIN = 8; // a sliver: its borders (2 px each) and 4 px inside
  const HANDLE = 6;
  const cut = (from, size, lo, hi) => {
    const a = Math.min(Math.max(from, lo), hi - MIN);
    return [a, Math.max(Math.min(from + size, hi), a + MIN) - a];
  };
  let timer = null;
  map.updateViewport = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      draw();
      frame.hidden = !graph.getNodes().length;
      if (frame.hidden || !frame.offsetParent) return;
      // the map's inside, in the frame's coordinates, less the frame's margins and borders and the
      // overhang of its zoom handle (at its bottom right)
      const base = frame.offsetParent.getBoundingClientRect();
      const box = el.getBoundingClientRect();
      const cs = getComputedStyle(frame);
      const [ml, mt] = [parseFloat(cs.marginLeft), parseFloat(cs.marginTop)];
      const [bw, bh] = [frame.offsetWidth - parseFloat(cs.width), frame.offsetHeight - parseFloat(cs.height)];
      const x0 = box.left + el.clientLeft - base.left - frame.offsetParent.clientLeft;
      const y0 = box.top + el.clientTop - base.top - frame.offsetParent.clientTop;
      const g = map.geometry;
      const [left, width] = cut(g.left + ml, g.width + bw, x0, x0 + el.clientWidth - HANDLE);
      const [top, height] = cut(g.top + mt, g.height + bh, y0, y0 + el.clientHeight - HANDLE);
      Object.assign(frame.style, { left: `${left - ml}px`, top: `${top - mt}px`, width: `${Math.max(0, width - bw)}px`, height: `${Math.max(0, height - bh)}px` });
    }, 0);
  };
  graph.on('node:added', map.updateViewport);
  el.addEventListener('minimap:shown', map.updateViewport); // (not drawn while hidden)
  graph.on('node:removed', map.updateViewport);
  map.updateViewport();
}

/** The minimap: plain boxes (no ports, no text), a map rather than a second canvas. */
export function addMinimap(graph, el) {
  class MapNodeView extends X6.NodeView {
    renderMarkup() { return this.renderJSONMarkup({ tagName: 'rect', selector: 'body' }); }
    renderPorts() {}
    update() { super.update({ body: { refWidth: '100%', refHeight: '100%', fill: '#8c959f' } }); }
  }
  // its size from the style sheet: the map may be hidden (0 x 0) when it is made
  const size = getComputedStyle(el);
  const map = new X6.MiniMap({
    container: el, width: parseFloat(size.width) || 200, height: parseFloat(size.height) || 140, padding: 10,
    graphOptions: { async: false, createCellView: (cell) => (cell.isNode() ? MapNodeView : null) },
  });
  graph.use(map);
  clampFrame(graph, map, el);
  // X6 pans when the map's viewport frame is dragged, and centres on a click outside it; but
  // when the whole pipeline is in view the frame covers the map, so a click (press and release
  // without moving) anywhere on the map centres the canvas on that spot
  let press = null;
  el.addEventListener('mousedown', (e) => { press = { x: e.clientX, y: e.clientY }; });
  el.addEventListener('click', (e) => {
    if (!press || Math.abs(e.clientX - press.x) + Math.abs(e.clientY - press.y) > 3) return;
    if (e.target.closest('.x6-widget-minimap-viewport-zoom')) return;
    const p = map.targetGraph.clientToLocal(e.clientX, e.clientY);
    graph.centerPoint(p.x, p.y);
  });
}
