// @ts-nocheck: DOM-heavy (X6 and dagre, globals of classic scripts); tsconfig.json checks the pure modules
/* The canvas: AntV X6 (a classic script, global X6) with its plugins, the pipeline drawn on it,
 * the draft read back from it, and dagre's layout (global dagre); the minimap is minimap.js.
 * Run status paints never enter the undo history (option `ignoreHistory`, see SILENT). */
import { makeRoom } from './room.js';
import { NAME_LINE, NAME_SIZE, NODE_H, NODE_SHAPE, NODE_W, LINK_SHAPE, bindingLine, edgeMeta, labelLines, labelText, nameLines, nodeBox, nodeLabel, nodeMeta } from './cells.js';
import { linkOf, nodeDoc, toDraft } from './document.js';
import { refusalsNear, watchDroppedLinks } from './droppedlinks.js';
import { moduleOf, refusal } from './rules.js';

export { addMinimap } from './minimap.js'; // the page starts it with the canvas

export const SILENT = { ignoreHistory: true };

const PORT_NAME = { fontSize: NAME_SIZE, lineHeight: NAME_LINE, fill: '#57606a', textVerticalAnchor: 'top' };

function registerShapes() {
  X6.Graph.registerNode(NODE_SHAPE, {
    inherit: 'rect',
    width: NODE_W,
    height: NODE_H,
    markup: [
      { tagName: 'rect', selector: 'body' },
      { tagName: 'rect', selector: 'stripe' },
      // the whole label on hover: a <title> of its group (X6 draws a text anew without its own)
      { tagName: 'g', selector: 'labelTip', className: 'node-label-tip', children: [{ tagName: 'text', selector: 'label', className: 'node-label' }] },
      // the last figures of a run on hover, over the status and progress lines
      { tagName: 'g', selector: 'statusTip', className: 'node-status-tip', children: [
        { tagName: 'text', selector: 'status', className: 'node-status' },
        { tagName: 'text', selector: 'progress', className: 'node-progress' }] },
      { tagName: 'text', selector: 'badge', className: 'node-badge' },
      { tagName: 'text', selector: 'bindings', className: 'node-bindings' },
    ],
    attrs: {
      body: { refWidth: '100%', refHeight: '100%', rx: 6, ry: 6, fill: '#fff', stroke: '#8c959f', strokeWidth: 1 },
      stripe: { width: 6, refHeight: '100%', rx: 3, ry: 3, fill: '#d0d7de' },
      label: { refX: 16, refY: 19, fontSize: 13, lineHeight: 16, fill: '#1b1f24', textAnchor: 'start', textVerticalAnchor: 'middle' }, // a second line 16 px under the first (cells.js, LABEL_LINE)
      status: { refX: 16, refY: 39, fontSize: 11, fill: '#57606a', textAnchor: 'start', textVerticalAnchor: 'middle' },
      progress: { refX: 16, refY: 53, fontSize: 10, fill: '#0969da', textAnchor: 'start', textVerticalAnchor: 'middle' },
      bindings: { refX: 16, refY: 54, fontSize: 11, fill: '#8250df', textAnchor: 'start', textVerticalAnchor: 'middle' },
      badge: { refX: NODE_W - 10, refY: 17, fontSize: 12, fontWeight: 'bold', fill: '#cf222e', textAnchor: 'end', textVerticalAnchor: 'middle' },
    },
    // each port at its own x (cells.portX), its name inside the node: under an input, over an output
    ports: {
      groups: {
        in: { position: 'absolute', label: { position: { name: 'bottom', args: { y: 8, attrs: { '.': { y: 0 } } } } },
          attrs: { circle: { r: 6, magnet: 'passive', stroke: '#57606a', strokeWidth: 1.5, fill: '#fff' }, text: PORT_NAME } },
        out: { position: 'absolute', label: { position: { name: 'top', args: { y: -8 } } },
          attrs: { circle: { r: 6, magnet: true, stroke: '#57606a', strokeWidth: 1.5, fill: '#d0d7de' }, text: { ...PORT_NAME, textVerticalAnchor: 'bottom' } } },
      },
    },
  });
  X6.Graph.registerEdge(LINK_SHAPE, {
    inherit: 'edge',
    zIndex: -1,
    connector: { name: 'smooth', args: { direction: 'V' } },
    attrs: { line: { stroke: '#57606a', strokeWidth: 1.5, targetMarker: { name: 'block', width: 8, height: 6 } } },
  }, true);
}

/**
 * The graph and its plugins. rules.edge(edge) answers why a new link may not be made ('' if it
 * may), rules.ends(edgeId, source, sourcePort, target, targetPort) the same of a link not yet made;
 * `drawing` gets each link the user starts to draw (it is in the graph before it is made).
 */
function makeGraph(container, rules, onRefusal, drawing, onDropped) {
  const near = refusalsNear();
  const graph = new X6.Graph({
    container,
    autoResize: true,
    async: false,
    grid: { size: 10, visible: true },
    background: { color: '#f6f8fa' },
    panning: { enabled: true, eventTypes: ['rightMouseDown', 'mouseWheel'] },
    mousewheel: { enabled: true, modifiers: ['ctrl', 'meta'], zoomAtMousePosition: true, minScale: 0.1, maxScale: 3 },
    connecting: {
      connector: { name: 'smooth', args: { direction: 'V' } },
      anchor: 'center',
      connectionPoint: 'anchor',
      allowBlank: false, allowLoop: false, allowNode: false, allowEdge: false, allowMulti: 'withPort',
      highlight: true,
      snap: { radius: 24 },
      createEdge() { const edge = this.createEdge({ shape: LINK_SHAPE }); drawing.add(edge); return edge; },
      validateMagnet({ magnet }) { return (magnet.getAttribute('port') || '').startsWith('out:'); },
      // called for every input as a link starts (only those that pass are lit) and near the pointer
      validateConnection({ edge, targetPort, sourcePort, sourceCell, targetCell, targetView, targetMagnet, type }) {
        if (!targetPort || !targetPort.startsWith('in:') || !sourcePort || !sourcePort.startsWith('out:') || sourceCell === targetCell) return false;
        const why = rules.ends(edge ? edge.id : null, sourceCell, sourcePort, targetCell, targetPort);
        if (type === 'target') near.note(edge, targetView, targetMagnet, why);
        return !why;
      },
      validateEdge({ edge }) {
        const why = rules.edge(edge);
        if (why) onRefusal(why);
        return !why;
      },
    },
    highlighting: {
      magnetAvailable: { name: 'stroke', args: { padding: 3, attrs: { stroke: '#0969da', 'stroke-width': 2 } } },
      magnetAdsorbed: { name: 'stroke', args: { padding: 4, attrs: { stroke: '#1a7f37', 'stroke-width': 3 } } },
    },
  });
  watchDroppedLinks(graph, drawing, near, onRefusal, onDropped);
  const history = new X6.History({
    enabled: true,
    beforeAddCommand(event, args) { return !(args && args.options && args.options.ignoreHistory); },
  });
  // the UMD build leaves out the plugins' Graph.prototype shortcuts: call the plugins themselves
  // Shift+click adds to the selection (or takes out) as Ctrl+click does
  const selection = new X6.Selection({ enabled: true, multiple: true, multipleSelectionModifiers: ['ctrl', 'meta', 'shift'],
    rubberband: true, movable: true, showNodeSelectionBox: true, pointerEvents: 'none' });
  const keyboard = new X6.Keyboard({ enabled: true });
  graph.use(history);
  graph.use(selection);
  graph.use(new X6.Snapline({ enabled: true }));
  graph.use(keyboard);
  // the keyboard plugin makes the canvas focusable by script only (-1): Tab must reach it too
  container.setAttribute('tabindex', '0');
  // its focus ring is for keyboard users: not drawn while the focus came from a click (app.css)
  container.addEventListener('pointerdown', () => { container.dataset.pointerFocus = ''; });
  container.addEventListener('blur', () => { delete container.dataset.pointerFocus; });
  return { graph, history, selection, keyboard };
}

/**
 * A node's lines placed, and its height, for its port names, bound parameters and progress line
 * (not an undoable change).
 */
export function arrange(node) {
  const box = nodeBox(nameLines(node.getPorts()), !!node.attr('bindings/title'), !!node.attr('progress/text'),
    labelLines(node.attr('label/text')));
  // the problem badge on the label's line, where the label leaves it room: not over the input ports' names
  node.attr({ label: { refY: box.labelMid }, badge: { refY: box.label }, status: { refY: box.status }, progress: { refY: box.progress },
    bindings: { refY: box.bindings } }, SILENT);
  if (node.getSize().height !== box.height) node.resize(NODE_W, box.height, SILENT);
}

// a node's height by id for dagre: the page's canvas knows its nodes' (they differ by port names)
let heightOf = () => NODE_H + 2 * NAME_LINE + 8;

/** Places for nodes from dagre, top to bottom: {id: {x, y}}; heights: {id: height} if known. */
export function dagrePositions(nodes, links, heights = {}) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 60, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  const h = (id) => heights[id] || heightOf(id);
  for (const n of nodes) g.setNode(n.id, { width: NODE_W, height: h(n.id) });
  for (const l of links) if (g.hasNode(l.from.node) && g.hasNode(l.to.node)) g.setEdge(l.from.node, l.to.node);
  dagre.layout(g);
  const out = {};
  for (const id of g.nodes()) { const p = g.node(id); out[id] = { x: p.x - NODE_W / 2, y: p.y - h(id) / 2 }; }
  return out;
}

const edgeEnds = (e) => ({ id: e.id, source: e.getSourceCellId(), sourcePort: e.getSourcePortId(), target: e.getTargetCellId(), targetPort: e.getTargetPortId() });

/**
 * The canvas of the page. catalogue: {modules, datasets} (Maps); extra: the draft's other fields;
 * onRefusal(text) tells the user why a link was not made.
 */
export function createCanvas(container, catalogue, extra, onRefusal) {
  registerShapes();
  const rules = {
    ends(edgeId, source, sourcePort, target, targetPort) {
      const link = linkOf({ id: edgeId, source: source.id, sourcePort, target: target.id, targetPort });
      if (!link) return '';
      const nodes = new Map([source, target].map((n) => [n.id, { id: n.id, kind: n.getData().kind }]));
      return refusal(catalogue.modules, nodes, canvas.links(), link);
    },
    edge(edge) {
      const [source, target] = [edge.getSourceCell(), edge.getTargetCell()];
      if (!source || !target) return '';
      return rules.ends(edge.id, source, edge.getSourcePortId(), target, edge.getTargetPortId());
    },
  };
  // A link being drawn is not part of the pipeline until it is made: an autosave that lands
  // mid-drag must not store it (it may yet be refused, or dropped on the blank canvas)
  const drawing = new WeakSet();
  const dropped = []; // what to do with a link dropped on the blank canvas (the quick search)
  const parts = makeGraph(container, rules, onRefusal, drawing, (d) => dropped.forEach((fn) => fn(d)));
  const { graph, history } = parts;
  heightOf = (id) => { const c = graph.getCellById(id); return c && c.isNode() ? c.getSize().height : NODE_H; };
  graph.on('edge:connected', ({ edge }) => drawing.delete(edge));
  // a node's bound parameters: a line of its own, the node taller (kept out of the undo history:
  // an undo of the binding itself changes the data back, and this follows)
  // A node grown so is given room: the nodes it would cover move down (room.js)
  graph.on('node:change:data', ({ node }) => {
    const line = bindingLine(node.getData().bindings);
    node.attr('bindings', { text: line.text, title: line.title }, SILENT);
    fitLabel(node); // a Dataset or Registered model node's label names what it now points at
    rearrange(node);
  });
  function rearrange(node) {
    const was = node.getSize().height;
    arrange(node);
    const { x, y, width: w, height: h } = node.getBBox();
    if (h <= was) return;
    const others = graph.getNodes().map((n) => { const b = n.getBBox(); return { id: n.id, x: b.x, y: b.y, w: b.width, h: b.height }; });
    for (const { id, dy } of makeRoom({ id: node.id, x, y, w, h, was }, others)) graph.getCellById(id).translate(0, dy);
  }
  // the label leaves room for the problem badge, and follows the data (a Dataset node's dataset)
  graph.on('node:change:attrs', ({ node }) => fitLabel(node));
  function fitLabel(node) {
    const doc = node.getData();
    const full = nodeLabel(doc, moduleOf(catalogue.modules, doc), catalogue.datasets);
    const text = labelText(full, !!node.attr('badge/text'));
    if (node.attr('label/text') === text && node.attr('labelTip/title') === full) return;
    const rows = labelLines(node.attr('label/text'));
    node.attr({ label: { text }, labelTip: { title: full } }, SILENT);
    if (labelLines(text) !== rows) rearrange(node); // a name now on two lines (or back on one): the status moves
  }
  const canvas = {
    ...parts,
    container,
    /** X6 node metadata of a node's JSON. */
    meta: (doc, pos, links = []) => nodeMeta(doc, pos, links, catalogue),
    /** The module of a node (its declaration, as the page's boot data has it), or undefined. */
    module: (node) => moduleOf(catalogue.modules, node.getData()),
    doc: (node) => nodeDoc(node.id, node.getData()),
    edges: () => graph.getEdges().filter((e) => !drawing.has(e)).map(edgeEnds),
    links: () => canvas.edges().map(linkOf).filter(Boolean),
    toDraft: () => toDraft(extra, graph.getNodes().map((n) => ({ id: n.id, data: n.getData(), position: n.getPosition() })), canvas.edges()),
    /** Draw a draft; nodes it has no place for are laid out by dagre. Not an undoable change. */
    load(draft) {
      const layout = draft.layout || {};
      const metas = draft.nodes.map((n) => canvas.meta(n, layout[n.id] || { x: 0, y: 0 }, draft.links));
      if (draft.nodes.some((n) => !layout[n.id])) {
        const auto = dagrePositions(draft.nodes, draft.links, Object.fromEntries(metas.map((m) => [m.id, m.height])));
        for (const m of metas) if (!layout[m.id]) Object.assign(m, auto[m.id]);
      }
      const cells = metas.concat(draft.links.map(edgeMeta));
      history.disable();
      graph.fromJSON({ cells });
      history.enable();
      history.clean();
    },
    selectedNodes: () => parts.selection.getSelectedCells().filter((c) => c.isNode()),
    select(cells) { parts.selection.clean(); parts.selection.select(cells); },
    /** `spot` ({x, y}), moved right past any module there, for a new one `height` tall. */
    freeSpot(spot, height = NODE_H) {
      const at = { ...spot };
      while (graph.getNodes().some((n) => n.getBBox().isIntersectWithRect({ ...at, width: NODE_W, height }))) at.x += NODE_W + 30;
      return at;
    },
    /** fn({node, port, at}) when a link drawn from output `port` of `node` is dropped on the blank canvas at `at` */
    onLinkDropped: (fn) => dropped.push(fn),
    focus: () => container.focus({ preventScroll: true }),
    /** Everything in view and centred in what is free of the banners that lie over the canvas's
     * top (the run shown, a problem); no module under the minimap in the bottom-right corner:
     * then fitted beside it or above it, whichever draws the pipeline larger. */
    fit() {
      const column = container.parentElement;
      const banners = column && column.querySelector('.banners');
      const area = container.getBoundingClientRect();
      const covered = banners ? banners.getBoundingClientRect().bottom - area.top : 0;
      const padding = { top: Math.max(40, covered + 16), right: 40, bottom: 40, left: 40 };
      const fitted = (extra) => fitInto(graph, area, { ...padding, ...extra });
      fitted({});
      const map = column && column.querySelector('#minimap');
      const m = map && map.getClientRects().length ? map.getBoundingClientRect() : null;
      const under = (r) => r.x + r.width > m.left && r.x < m.right && r.y + r.height > m.top && r.y < m.bottom;
      // from the model, not the drawing: nodes are drawn asynchronously, after a fit on opening
      if (!m || !graph.getNodes().some((n) => under(graph.localToClient(n.getBBox())))) return;
      const beside = { right: area.right - m.left + 16 };
      const above = { bottom: area.bottom - m.top + 16 };
      const besideZoom = fitted(beside);
      if (fitted(above) < besideZoom) fitted(beside);
    },
  };
  return canvas;
}


/** Zoom (at most 100 %) and move the graph so that all of it is centred in `area` (the canvas's
 * client box) less `padding` on each side; returns the zoom. (X6's zoomToFit centres the content
 * in the whole canvas whatever the padding.) */
function fitInto(graph, area, padding) {
  const content = graph.getContentArea();
  if (!content.width || !content.height) return graph.zoom();
  const width = Math.max(area.width - padding.left - padding.right, 40);
  const height = Math.max(area.height - padding.top - padding.bottom, 40);
  const zoom = Math.min(1, width / content.width, height / content.height);
  graph.scale(zoom, zoom);
  graph.translate(padding.left + (width - content.width * zoom) / 2 - content.x * zoom,
    padding.top + (height - content.height * zoom) / 2 - content.y * zoom);
  return zoom;
}
