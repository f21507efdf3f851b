/* The rules a new link must keep (pure), as the server applies them (designer/engine/graph.py,
 * sdk/declarations.py `compatible`): an output feeds an input of its type, an AnyDirectory input, or
 * an input that declares it among the types it also accepts (the catalogue's `accepts`: a trained
 * ModelDirectory feeds Train PyTorch Model's untrained model, to fine-tune), an input is fed once,
 * and the links make no cycle. The server stays the judge: every save
 * answers with the pipeline's problems; these rules refuse a link before it is drawn. */
import { IN, OUT } from './document.js';

/** The port type that accepts every other one. */
export const ANY_DIRECTORY = 'AnyDirectory';

/** Whether an output of `outType` may feed an input of `inType` that also accepts `alsoAccepted`
 * (the port's declared `accepts`, when it has one). */
export const accepts = (outType, inType, alsoAccepted = []) => outType === inType || inType === ANY_DIRECTORY
  || alsoAccepted.includes(outType);

/** "UntrainedModelDirectory or ModelDirectory": the types a declared input port accepts. */
export const acceptedText = (port) => (port.accepts || [port.type]).join(' or ');

/** A port as the module declares it ({name, label, type, optional}), or null. */
export function declaredPort(module, group, name) {
  if (!module) return null;
  return (group === IN ? module.inputs : module.outputs).find((p) => p.name === name) || null;
}

/**
 * The module a node runs: the version its JSON pins (a component's; `modules.earlier` holds the
 * versions that are not the latest, keyed "kind@version"), else its kind's latest.
 */
export function moduleOf(modules, node) {
  if (!node) return undefined;
  const pinned = node.version !== undefined && modules.earlier ? modules.earlier.get(`${node.kind}@${node.version}`) : undefined;
  return pinned || modules.get(node.kind);
}

/** How a message names a node: "Module label" ("Module label (n3)" with `withId`, to tell apart two of one module). */
export function nodeName(modules, node, withId = false) {
  const m = moduleOf(modules, node);
  return m ? `${m.label}${withId ? ` (${node.id})` : ''}` : `${node.kind} (${node.id})`;
}

/** A port's type as a sentence names it ("images with a labels index"); its type's name if the catalogue gives no words. */
const typeWords = (port) => port.what || port.type;
/** "an untrained PyTorch model and its settings or a trained model with its classes and transforms": what an input takes. */
export const takes = (port) => (port.accepts_what || [typeWords(port)]).join(' or ');

/** Whether the links lead from node id `from` to node id `to`. */
export function reaches(links, from, to) {
  const next = new Map();
  for (const l of links) {
    if (!next.has(l.from.node)) next.set(l.from.node, []);
    next.get(l.from.node).push(l.to.node);
  }
  const seen = new Set();
  const stack = [from];
  while (stack.length) {
    const n = stack.pop();
    if (n === to) return true;
    if (seen.has(n)) continue;
    seen.add(n);
    stack.push(...(next.get(n) || []));
  }
  return false;
}

/**
 * Why `link` may not be made, or '' when it may.
 * modules: Map kind -> module; nodes: Map id -> {id, kind}; links: every link of the canvas
 * (the new one may be among them).
 */
export function refusal(modules, nodes, links, link) {
  const src = nodes.get(link.from.node);
  const dst = nodes.get(link.to.node);
  if (!src || !dst) return '';
  // two nodes of one module are told apart by their ids
  const twins = src.id !== dst.id && nodeName(modules, src) === nodeName(modules, dst);
  const name = (n) => nodeName(modules, n, twins);
  const out = declaredPort(moduleOf(modules, src), OUT, link.from.port);
  const inp = declaredPort(moduleOf(modules, dst), IN, link.to.port);
  if (out && inp && !accepts(out.type, inp.type, inp.accepts)) {
    return `Cannot connect ${name(src)}'s output "${out.label}" to ${name(dst)}'s input "${inp.label}": `
      + `the output gives ${typeWords(out)}, and ${inp.label} takes only ${takes(inp)}.`;
  }
  if (links.some((l) => l.id !== link.id && l.to.node === dst.id && l.to.port === link.to.port)) {
    return `Input "${inp ? inp.label : `${IN}:${link.to.port}`}" of ${name(dst)} is already connected: delete that link first.`;
  }
  if (reaches(links, dst.id, src.id)) {
    return `Cannot connect ${name(src)} to ${name(dst)}: the link would make a cycle (${name(dst)} already feeds ${name(src)}).`;
  }
  return '';
}
