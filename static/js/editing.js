/* Editing the canvas: copy and paste, delete, undo and redo, moving with the arrow keys, zoom,
 * fit and auto-layout; the toolbar's buttons and the keyboard shortcuts. */
import { $ } from './dom.js';
import { NODE_W, pastedEdgeMeta } from './cells.js';
import { clipOf, copyOf, newNodeDoc, newNodeId, pastePlan, stepThrough } from './document.js';
import { dagrePositions } from './canvas.js';
import { SHORTCUTS, shownKeys } from './keymap.js';
import { banner } from './messages.js';

/** saveNow() saves at once (Ctrl+S). Returns {add, addAtCentre, duplicate, removeCells, updateButtons}. */
export function editing(canvas, modules, saveNow) {
  const { graph, history, selection, keyboard } = canvas;
  let clipboard = null;
  const nodeIds = () => graph.getNodes().map((n) => n.id);

  function copy() {
    const nodes = canvas.selectedNodes();
    if (!nodes.length) return;
    clipboard = clipOf(nodes.map((n) => ({ doc: canvas.doc(n), position: n.getPosition() })), canvas.edges());
    banner(`Copied ${nodes.length} module(s).`, { kind: 'info' });
  }

  function paste() {
    if (!clipboard) return;
    const plan = pastePlan(clipboard, nodeIds());
    graph.startBatch('paste');
    const added = plan.nodes.map(({ doc, pos }) => graph.addNode(canvas.meta(doc, pos), { silentSelect: true }));
    for (const l of plan.links) graph.addEdge(pastedEdgeMeta(l));
    graph.stopBatch('paste');
    clipboard = plan.clip;
    canvas.select(added);
  }

  function removeSelection() {
    const cells = selection.getSelectedCells();
    if (cells.length) removeCells(cells);
  }

  const zoomBy = (d) => graph.zoom(d, { minScale: 0.1, maxScale: 3 });
  function autoLayout() {
    const d = canvas.toDraft();
    const pos = dagrePositions(d.nodes, d.links);
    graph.startBatch('layout');
    for (const n of graph.getNodes()) n.position(pos[n.id].x, pos[n.id].y);
    graph.stopBatch('layout');
    canvas.fit();
  }
  const undo = () => { if (history.canUndo()) history.undo(); };
  const redo = () => { if (history.canRedo()) history.redo(); };
  function moveSelection(dx, dy) {
    const nodes = canvas.selectedNodes();
    if (!nodes.length) return;
    graph.startBatch('move');
    nodes.forEach((n) => n.translate(dx, dy));
    graph.stopBatch('move');
  }

  /** Where a new node goes when no place is given: in view, staggered so that several do not overlap. */
  function centreSpot() {
    const area = graph.getGraphArea();
    const n = graph.getNodes().length;
    return { x: area.x + area.width / 2 - NODE_W / 2 + (n % 5) * 20, y: area.y + area.height / 3 + (n % 5) * 20 };
  }

  /**
   * A new node of a palette entry (with the parameters it presets) at `pos` (or in view), fed by
   * `feed(doc)` when given (a link {fromPort, toPort, from} or null); one undo step. Returns the node.
   */
  function add(kind, datasetId, parameters = {}, pos = null, feed = null) {
    const doc = newNodeDoc(modules.get(kind), nodeIds(), datasetId);
    Object.assign(doc.parameters, parameters);
    const link = feed ? feed(doc) : null;
    graph.startBatch('add');
    const node = graph.addNode(canvas.meta(doc, pos || centreSpot()));
    if (link) graph.addEdge(pastedEdgeMeta({ ...link, to: node.id }));
    graph.stopBatch('add');
    canvas.select(node);
    canvas.focus();
    return node;
  }
  const addAtCentre = (kind, datasetId, parameters = {}) => { add(kind, datasetId, parameters); };

  /** A copy of a node beside it (its parameters, run settings and comment), selected. */
  function duplicate(node) {
    const doc = { ...copyOf(canvas.doc(node)), id: newNodeId(nodeIds()) };
    const p = node.getPosition();
    // beside it, moved right past any module already there
    const copy = graph.addNode(canvas.meta(doc, canvas.freeSpot({ x: p.x + NODE_W + 30, y: p.y }, node.getSize().height)));
    canvas.select(copy);
    bringIntoView(copy);
    canvas.focus();
  }

  function removeCells(cells) {
    graph.startBatch('delete');
    graph.removeCells(cells);
    graph.stopBatch('delete');
  }

  /** Select the module after (1) or before (-1) the one selected, brought into view if it is not. */
  function selectNext(step) {
    const nodes = graph.getNodes();
    const current = canvas.selectedNodes().slice(-1)[0];
    const id = stepThrough(nodes.map((n) => ({ id: n.id, ...n.getPosition() })), current && current.id, step);
    const node = id && graph.getCellById(id);
    if (!node) return;
    canvas.select(node);
    bringIntoView(node);
  }

  /** Centre the view on a node that is not wholly in it. */
  function bringIntoView(node) {
    const area = graph.getGraphArea();
    const box = node.getBBox();
    if (!(box.x >= area.x && box.y >= area.y && box.x + box.width <= area.x + area.width && box.y + box.height <= area.y + area.height)) {
      graph.centerCell(node);
    }
  }

  // the keys come from the one table the "?" overlay lists (keymap.js)
  const STEP = { left: [-10, 0], right: [10, 0], up: [0, -10], down: [0, 10] };
  const actions = {
    delete: removeSelection, copy, paste, undo, redo, deselect: () => selection.clean(), save: saveNow,
    'select-all': () => selection.select(graph.getNodes()), 'zoom-in': () => zoomBy(0.1), 'zoom-out': () => zoomBy(-0.1),
    fit: canvas.fit, move: (combo) => moveSelection(...STEP[combo]),
    'select-next': () => selectNext(1), 'select-previous': () => selectNext(-1),
  };
  for (const s of SHORTCUTS.filter((x) => x.canvas)) {
    for (const combo of s.combos) {
      keyboard.bindKey(combo, (e) => { if (e && e.preventDefault) e.preventDefault(); actions[s.id](combo); return false; });
    }
  }
  for (const ev of ['blank:mousedown', 'cell:mousedown']) graph.on(ev, canvas.focus);

  const buttons = { undo, redo, copy, paste, delete: removeSelection, 'zoom-in': () => zoomBy(0.1), 'zoom-out': () => zoomBy(-0.1), fit: canvas.fit, 'auto-layout': autoLayout };
  for (const [id, fn] of Object.entries(buttons)) $(`#${id}`).addEventListener('click', () => fn());
  // a button's title names its keys, from the same table: "Undo (Ctrl+Z)"
  for (const s of SHORTCUTS.filter((x) => x.canvas && buttons[x.id])) {
    const b = $(`#${s.id}`);
    b.title = `${b.title.replace(/ \(.*\)$/, '')} (${shownKeys(s).join(' or ')})`;
  }
  graph.on('scale', ({ sx }) => { $('#zoom-level').textContent = `${Math.round(sx * 100)}%`; });

  function updateButtons() {
    $('#undo').disabled = !history.canUndo();
    $('#redo').disabled = !history.canRedo();
    $('#copy').disabled = !canvas.selectedNodes().length;
    $('#delete').disabled = !selection.getSelectedCells().length;
    $('#paste').disabled = !clipboard;
  }
  return { add, addAtCentre, duplicate, removeCells, updateButtons };
}
