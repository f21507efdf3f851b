/* Editing the canvas: copy and paste, delete, undo and redo, moving with the arrow keys, zoom,
 * fit and auto-layout; the toolbar's buttons and the keyboard shortcuts. */
import { $ } from './dom.js';
import { NODE_W, pastedEdgeMeta } from './cells.js';
import { clipOf, newNodeDoc, pastePlan } from './document.js';
import { dagrePositions } from './canvas.js';
import { banner } from './messages.js';

/** saveNow() saves at once (Ctrl+S). Returns {addAtCentre, updateButtons}. */
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
    if (!cells.length) return;
    graph.startBatch('delete');
    graph.removeCells(cells);
    graph.stopBatch('delete');
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

  /** A new node of a palette entry (with the parameters it presets), placed in view (staggered so that several do not overlap). */
  function addAtCentre(kind, datasetId, parameters = {}) {
    const area = graph.getGraphArea();
    const n = graph.getNodes().length;
    const x = area.x + area.width / 2 - NODE_W / 2 + (n % 5) * 20;
    const y = area.y + area.height / 3 + (n % 5) * 20;
    const doc = newNodeDoc(modules.get(kind), nodeIds(), datasetId);
    Object.assign(doc.parameters, parameters);
    const node = graph.addNode(canvas.meta(doc, { x, y }));
    canvas.select(node);
    canvas.focus();
  }

  const keys = [
    [['delete', 'backspace'], removeSelection],
    [['ctrl+c', 'meta+c'], copy],
    [['ctrl+v', 'meta+v'], paste],
    [['ctrl+z', 'meta+z'], undo],
    [['ctrl+shift+z', 'meta+shift+z', 'ctrl+y', 'meta+y'], redo],
    [['ctrl+a', 'meta+a'], () => selection.select(graph.getNodes())],
    [['ctrl+=', 'meta+=', 'ctrl+plus'], () => zoomBy(0.1)],
    [['ctrl+-', 'meta+-'], () => zoomBy(-0.1)],
    [['ctrl+0', 'meta+0'], canvas.fit],
    [['ctrl+s', 'meta+s'], saveNow],
    [['left'], () => moveSelection(-10, 0)], [['right'], () => moveSelection(10, 0)],
    [['up'], () => moveSelection(0, -10)], [['down'], () => moveSelection(0, 10)],
    [['escape'], () => selection.clean()],
  ];
  for (const [combos, fn] of keys) keyboard.bindKey(combos, (e) => { if (e && e.preventDefault) e.preventDefault(); fn(); return false; });
  for (const ev of ['blank:mousedown', 'cell:mousedown']) graph.on(ev, canvas.focus);

  const buttons = { undo, redo, copy, paste, delete: removeSelection, 'zoom-in': () => zoomBy(0.1), 'zoom-out': () => zoomBy(-0.1), fit: canvas.fit, 'auto-layout': autoLayout };
  for (const [id, fn] of Object.entries(buttons)) $(`#${id}`).addEventListener('click', () => fn());
  graph.on('scale', ({ sx }) => { $('#zoom-level').textContent = `${Math.round(sx * 100)}%`; });

  function updateButtons() {
    $('#undo').disabled = !history.canUndo();
    $('#redo').disabled = !history.canRedo();
    $('#copy').disabled = !canvas.selectedNodes().length;
    $('#delete').disabled = !selection.getSelectedCells().length;
    $('#paste').disabled = !clipboard;
  }
  return { addAtCentre, updateButtons };
}
