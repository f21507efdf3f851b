/* The pipeline document (pure): a node's JSON, the draft sent to the server, new node ids,
 * copy and paste, and the edits the node pane makes. The canvas keeps each node's JSON minus its
 * id as the X6 node's `data`; links join ports named "in:<port>" and "out:<port>", because a
 * module may have an input and an output of the same name. */

export const IN = 'in';
export const OUT = 'out';
const LAYOUT_KEYS = ['nodes', 'links', 'layout'];

export const portId = (group, name) => `${group}:${name}`;
/** "in:images" -> ["in", "images"] (a port's own name may hold a colon). */
export const splitPortId = (id) => { const [group, name] = id.split(/:(.*)/s); return [group, name]; };
export const portName = (id) => id.replace(/^(in|out):/, '');

/** A deep copy of plain JSON. */
export const copyOf = (x) => JSON.parse(JSON.stringify(x));

/** A node's JSON from its id and the canvas's data: empty fields left out. */
export function nodeDoc(id, data) {
  const d = data || {};
  const doc = { id, kind: d.kind, parameters: { ...(d.parameters || {}) } };
  if (d.version) doc.version = d.version; // a component's version, pinned by the server at save
  if (d.run_settings && Object.keys(d.run_settings).length) doc.run_settings = { ...d.run_settings };
  if (d.comment) doc.comment = d.comment;
  if (d.regenerate_output) doc.regenerate_output = true;
  if (d.bindings && Object.keys(d.bindings).length) doc.bindings = { ...d.bindings };
  return doc;
}

/** The canvas data of a node's JSON (everything but the id). */
export function nodeData(doc) {
  const { id, ...data } = doc;
  return data;
}

/** What a draft holds besides its graph (name, description...): kept as loaded, sent back on save. */
export const draftExtra = (draft) => Object.fromEntries(Object.entries(draft).filter(([k]) => !LAYOUT_KEYS.includes(k)));

/** A link of the document from a canvas edge's ends, or null for an edge not joined at both ports. */
export function linkOf({ id, source, sourcePort, target, targetPort }) {
  if (!sourcePort || !targetPort) return null;
  return { id, from: { node: source, port: portName(sourcePort) }, to: { node: target, port: portName(targetPort) } };
}

/**
 * The draft as the server stores it.
 * nodes: [{id, data, position: {x, y}}]; edges: [{id, source, sourcePort, target, targetPort}].
 */
export function toDraft(extra, nodes, edges) {
  const layout = {};
  for (const n of nodes) layout[n.id] = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
  const links = edges.map(linkOf).filter(Boolean);
  const docs = nodes.map((n) => nodeDoc(n.id, n.data));
  return { ...extra, schema_version: schemaVersion(extra, docs), nodes: docs, links, layout };
}

/** The draft's schema_version: 2 once it declares parameters or binds one, 3 once it names a
 * compute target (as loaded otherwise). */
export function schemaVersion(extra, docs) {
  const v2 = (extra.parameters && extra.parameters.length) || docs.some((d) => d.bindings);
  const v3 = extra.compute_target || docs.some((d) => d.run_settings && d.run_settings.compute_target);
  return Math.max(extra.schema_version || 1, v3 ? 3 : v2 ? 2 : 1);
}

/** The first free id "n<k>" above every id of that form already taken. */
/** The module after (step 1) or before (step -1) `currentId` in reading order, top to bottom
 * then left to right (modules less than `band` px apart vertically share a row); the first or the
 * last when none is current; it goes round at the ends. items: [{id, x, y}]. */
export function stepThrough(items, currentId, step, band = 40) {
  if (!items.length) return null;
  const order = [...items].sort((a, b) => (Math.abs(a.y - b.y) < band ? a.x - b.x : a.y - b.y)).map((i) => i.id);
  const at = order.indexOf(currentId);
  if (at < 0) return step > 0 ? order[0] : order[order.length - 1];
  return order[(at + step + order.length) % order.length];
}

export function newNodeId(taken) {
  const ids = new Set(taken);
  let k = 1 + Math.max(0, ...Array.from(ids, (id) => (/^n(\d+)$/.test(id) ? Number(id.slice(1)) : 0)));
  while (ids.has(`n${k}`)) k += 1;
  return `n${k}`;
}

/** A new node of a module: its parameters' defaults, the dataset of a dataset node, a component's version. */
export function newNodeDoc(module, taken, datasetId) {
  const parameters = {};
  for (const p of module.params) if (p.default !== null && p.default !== undefined) parameters[p.name] = p.default;
  if (datasetId) parameters.dataset = Number(datasetId);
  const doc = { id: newNodeId(taken), kind: module.kind, parameters };
  if (module.component) doc.version = module.version; // kept when a newer version is added later
  // an Azure ML v2 file's distribution and resources (process_count_per_instance, instance_count)
  if (module.component && module.component.run_settings) doc.run_settings = { ...module.component.run_settings };
  return doc;
}

/**
 * What Copy keeps: the nodes' JSON and places, and the links between two copied nodes.
 * nodes: [{doc, position}]; edges as for toDraft.
 */
export function clipOf(nodes, edges) {
  const ids = new Set(nodes.map((n) => n.doc.id));
  return {
    nodes: nodes.map((n) => ({ doc: copyOf(n.doc), pos: { x: n.position.x, y: n.position.y } })),
    links: edges.filter((e) => ids.has(e.source) && ids.has(e.target))
      .map((e) => ({ from: e.source, fromPort: e.sourcePort, to: e.target, toPort: e.targetPort })),
  };
}

/**
 * What Paste adds: the clipboard's nodes under new ids, moved by `offset`, and their links.
 * Returns {nodes: [{doc, pos}], links: [...], clip}: `clip` is the clipboard moved on, so that
 * pasting again does not cover the last copies.
 */
export function pastePlan(clip, taken, offset = 40) {
  const ids = new Set(taken);
  const idMap = {};
  const nodes = clip.nodes.map(({ doc, pos }) => {
    const id = newNodeId(ids);
    ids.add(id);
    idMap[doc.id] = id;
    return { doc: { ...copyOf(doc), id }, pos: { x: pos.x + offset, y: pos.y + offset } };
  });
  const links = clip.links.map((l) => ({ ...l, from: idMap[l.from], to: idMap[l.to] }));
  const moved = clip.nodes.map((n) => ({ ...n, pos: { x: n.pos.x + offset, y: n.pos.y + offset } }));
  return { nodes, links, clip: { ...clip, nodes: moved } };
}

/** A parameter's value from its field: numbers as numbers (a bad one as typed: the server says why). */
export function paramValue(type, value, checked) {
  if (type === 'bool') return checked;
  if (type === 'int' || type === 'float') {
    if (value.trim() === '') return null;
    const v = Number(value);
    return Number.isNaN(v) ? value : v;
  }
  return value;
}

/**
 * A node's data after an edit in its pane, or null for a field the pane does not own.
 * field: {param, type, runSetting, comment, regenerate, value, checked} as read from the input.
 */
export function editedData(data, field) {
  const next = copyOf(data);
  if (field.param) {
    next.parameters = { ...(next.parameters || {}), [field.param]: paramValue(field.type, field.value, field.checked) };
  } else if (field.runSetting && field.type === 'str') { // a name (the compute target): none chosen, none kept
    const { [field.runSetting]: _, ...rest } = next.run_settings || {};
    next.run_settings = field.value ? { ...rest, [field.runSetting]: field.value } : rest;
    if (!Object.keys(next.run_settings).length) delete next.run_settings;
  } else if (field.runSetting) {
    const v = field.value.trim() === '' ? null : Number(field.value);
    next.run_settings = { ...(next.run_settings || {}), [field.runSetting]: Number.isNaN(v) ? field.value : v };
  } else if (field.comment) {
    next.comment = field.value;
  } else if (field.regenerate) {
    next.regenerate_output = field.checked;
  } else {
    return null;
  }
  return next;
}
