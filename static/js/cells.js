/* X6 cells from the pipeline document (pure): a node's box, its ports, its label; a link's edge. */
import { IN, OUT, nodeData, portId } from './document.js';
import { bindingShort, bindingText } from './params.js';
import { acceptedText } from './rules.js';

export const NODE_W = 200;
export const NODE_H = 54;
/** A node with bound parameters is taller: a third line names them ("learning_rate=@lr"). */
export const NODE_H_BOUND = 70;
export const NODE_SHAPE = 'pd-module';
export const LINK_SHAPE = 'pd-link';
export const PROBLEM_RED = '#cf222e';

/** "Untrained model (UntrainedModelDirectory or ModelDirectory): a model of ResNet..." (the port's help, if any). */
const portTitle = (p) => `${p.label} (${acceptedText(p)}${p.optional ? ', optional' : ''})${p.help ? `: ${p.help}` : ''}`;

/** A module's ports, and in red any port a link names that the module does not declare. */
export function portItems(module, nodeId, links) {
  const items = [];
  const declared = new Set();
  for (const [side, group] of [['inputs', IN], ['outputs', OUT]]) {
    for (const p of (module ? module[side] : [])) {
      declared.add(portId(group, p.name));
      items.push({ id: portId(group, p.name), group,
        attrs: { circle: { title: portTitle(p), 'data-type': p.type, 'data-port': p.name } } });
    }
  }
  for (const l of links || []) {
    for (const [end, group] of [[l.from, OUT], [l.to, IN]]) {
      const id = portId(group, end.port);
      if (end.node === nodeId && !declared.has(id)) {
        declared.add(id);
        items.push({ id, group, attrs: { circle: { title: `${end.port} (not declared by this module)`, stroke: PROBLEM_RED, fill: '#ffebe9' } } });
      }
    }
  }
  return items;
}

// measuring text (X6's textWrap) costs more than the rest of a node's drawing: cut by length
export const shorten = (text) => (text.length > 26 ? `${text.slice(0, 25)}…` : text);

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
  const m = catalogue.modules.get(doc.kind);
  const bound = bindingLine(doc.bindings);
  return {
    id: doc.id, shape: NODE_SHAPE, x: pos.x, y: pos.y, width: NODE_W, height: bound.height, data: nodeData(doc),
    attrs: { label: { text: shorten(nodeLabel(doc, m, catalogue.datasets)) }, body: { 'data-kind': doc.kind, title: m ? m.label : doc.kind },
      bindings: { text: bound.text, title: bound.title } },
    ports: { items: portItems(m, doc.id, links) },
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
