/* X6 cells from the pipeline document (pure): a node's box, its ports, its label; a link's edge. */
import { IN, OUT, nodeData, portId } from './document.js';
import { bindingShort, bindingText } from './params.js';
import { moduleOf, takes } from './rules.js';
import { fitText, textWidth, wrapText } from './textfit.js';

export const NODE_W = 200;
/** The height of a node's own lines (label, status), without its port names. */
export const NODE_H = 54;
/** A node with bound parameters is taller: a third line names them ("learning_rate=@lr"). */
export const NODE_H_BOUND = 70;
/** A running node's progress line ("epoch 3/10 · loss 0.412 · acc 0.883"), under its status. */
export const PROGRESS_H = 14;
// port names: 10 px lines; the ports spread along the edge clear of the status stripe (x < 6)
export const NAME_SIZE = 10;
export const NAME_LINE = 11;
const PORTS_FROM = 12;
const PORTS_TO = NODE_W - 4;
// the label (13 px) from x = 16 to the node's right edge, or to the problem badge ("⚠ 12": 12 px
// bold, some 30 px, ending at NODE_W - 10)
const LABEL_SIZE = 13;
const LABEL_LINE = 16;
const LABEL_W = NODE_W - 16 - 6;
const LABEL_W_BADGED = NODE_W - 10 - 30 - 8 - 16;
const STATUS_W = NODE_W - 16 - 6;
export const NODE_SHAPE = 'pd-module';
export const LINK_SHAPE = 'pd-link';
export const PROBLEM_RED = '#cf222e';

/** "Images (images with a labels index, optional): ..." (the port's help, if any): its type in words, as messages say it. */
const portTitle = (p) => `${p.label} (${takes(p)}${p.optional ? ', optional' : ''})${p.help ? `: ${p.help}` : ''}`;

/** The x of the i-th of n ports along the node's top (inputs) or bottom (outputs) edge. */
export const portX = (i, n) => PORTS_FROM + ((i + 0.5) * (PORTS_TO - PORTS_FROM)) / n;

/** A port's name as drawn by its circle: at most two lines, as wide as the room between its neighbours. */
export const portNameLines = (label, n) => wrapText(label, (PORTS_TO - PORTS_FROM) / n - 6, NAME_SIZE);

/** A module's ports, and in red any port a link names that the module does not declare; each
 * with its name drawn inside the node, under an input's circle, over an output's. */
export function portItems(module, nodeId, links) {
  const items = [];
  const declared = new Set();
  for (const [side, group] of [['inputs', IN], ['outputs', OUT]]) {
    for (const p of (module ? module[side] : [])) {
      declared.add(portId(group, p.name));
      items.push({ id: portId(group, p.name), group, name: p.label,
        attrs: { circle: { title: portTitle(p), 'data-type': p.type, 'data-port': p.name } } });
    }
  }
  for (const l of links || []) {
    for (const [end, group] of [[l.from, OUT], [l.to, IN]]) {
      const id = portId(group, end.port);
      if (end.node === nodeId && !declared.has(id)) {
        declared.add(id);
        items.push({ id, group, name: end.port, attrs: { circle: { title: `${end.port} (not declared by this module)`, stroke: PROBLEM_RED, fill: '#ffebe9' } } });
      }
    }
  }
  for (const group of [IN, OUT]) {
    const mine = items.filter((p) => p.group === group);
    mine.forEach((p, i) => {
      p.args = { x: portX(i, mine.length), y: group === IN ? 0 : '100%' };
      p.attrs.text = { text: portNameLines(p.name, mine.length).join('\n'), title: p.attrs.circle.title };
      delete p.name;
    });
  }
  return items;
}

/** How many lines of port names a node has on top (inputs) and at the bottom (outputs): X6 port items. */
export function nameLines(items) {
  const lines = { [IN]: 0, [OUT]: 0 };
  for (const p of items) {
    const text = p.attrs && p.attrs.text ? p.attrs.text.text : '';
    if (text) lines[p.group] = Math.max(lines[p.group], text.split('\n').length);
  }
  return lines;
}

/**
 * Where a node's lines go, and its height: the input names under the top edge, then the label,
 * the status, the progress line (while a node reports progress), the bound parameters, then the
 * output names over the bottom edge. lines: nameLines(ports); labelRows: the label's lines (labelLines).
 */
export function nodeBox(lines, bound, progress, labelRows = 1) {
  const top = lines[IN] ? lines[IN] * NAME_LINE + 2 : 0;
  const label = top ? top + 16 : 19;
  const status = label + 18 + LABEL_LINE * (labelRows - 1);
  let y = status;
  const prog = y + PROGRESS_H;
  if (progress) y = prog;
  const bindings = y + 16;
  if (bound) y = bindings;
  const height = y + (lines[OUT] ? 13 + lines[OUT] * NAME_LINE + 6 : 17);
  // label: its first line's middle (where the badge goes); labelMid: the middle of its lines (X6
  // centres a text of several lines on its refY)
  return { height, label, labelMid: label + (LABEL_LINE * (labelRows - 1)) / 2, status, progress: prog, bindings };
}

/**
 * The label as drawn: one line, or two where it is longer than the node is wide (a Registered
 * model node naming its model, a Dataset node its dataset), broken at a space; the rest cut with
 * "…". How many lines never depends on the problem badge (a node does not change height as
 * problems come and go): with the badge shown, the first line, which the badge shares, is cut to
 * leave it room.
 */
export function labelText(full, badged) {
  const lines = textWidth(full, LABEL_SIZE) <= LABEL_W ? [full] : wrapText(full, LABEL_W, LABEL_SIZE, 2);
  if (badged) lines[0] = fitText(lines[0], LABEL_W_BADGED, LABEL_SIZE);
  return lines.join('\n');
}
export const shorten = (text) => labelText(text, false);
/** How many lines a label takes as drawn (labelText's). */
export const labelLines = (text) => String(text || '').split('\n').length;
/** A status or progress line, cut to the node's width. */
export const statusFit = (text, size = 11) => fitText(text, STATUS_W, size);

/** "Module label", "Load dataset: digits" for a dataset node, "Registered model: digits" for a
 * registered model's node, or "<kind> (unknown module)". */
export function nodeLabel(doc, module, datasets) {
  if (!module) return `${doc.kind} (unknown module)`;
  const ds = doc.kind === 'dataset' && doc.parameters ? datasets.get(doc.parameters.dataset) : null;
  if (ds) return `${module.label}: ${ds.name}`;
  const model = doc.kind === 'registered_model' && doc.parameters ? doc.parameters.model : null;
  return model ? `${module.label}: ${model}` : module.label;
}

/** A node's binding line and height: {text, title, height}. */
export function bindingLine(bindings) {
  const title = bindingText(bindings);
  const short = bindingShort(bindings);
  // 11 px text: some 29 characters fit between the stripe and the node's right edge
  return { text: short.length > 29 ? `${short.slice(0, 28)}…` : short, title, height: title ? NODE_H_BOUND : NODE_H };
}

/** The X6 node of a node's JSON. catalogue: {modules: Map kind -> module, datasets: Map id -> dataset}. */
export function nodeMeta(doc, pos, links, catalogue) {
  const m = moduleOf(catalogue.modules, doc);
  const bound = bindingLine(doc.bindings);
  const items = portItems(m, doc.id, links);
  const label = nodeLabel(doc, m, catalogue.datasets);
  const text = labelText(label, false);
  const box = nodeBox(nameLines(items), !!bound.title, false, labelLines(text));
  return {
    id: doc.id, shape: NODE_SHAPE, x: pos.x, y: pos.y, width: NODE_W, height: box.height, data: nodeData(doc),
    attrs: { label: { text, refY: box.labelMid }, badge: { refY: box.label }, labelTip: { title: label }, body: { 'data-kind': doc.kind, title: m ? m.label : doc.kind },
      status: { refY: box.status }, progress: { refY: box.progress }, bindings: { text: bound.text, title: bound.title, refY: box.bindings } },
    ports: { items },
  };
}

/** The X6 edge of a link. */
export function edgeMeta(link) {
  return {
    id: link.id, shape: LINK_SHAPE,
    source: { cell: link.from.node, port: portId(OUT, link.from.port) },
    target: { cell: link.to.node, port: portId(IN, link.to.port) },
  };
}

/** The X6 edge of a pasted link ({from, fromPort, to, toPort}: ports as the canvas names them). */
export const pastedEdgeMeta = (l) => ({ shape: LINK_SHAPE, source: { cell: l.from, port: l.fromPort }, target: { cell: l.to, port: l.toPort } });
