/* The quick search's choices (pure): which palette entries a query finds, in what order, and the
 * link that feeds the module added from the one module selected. An entry is what the palette
 * offers: {label, text (the palette's), kind, dataset, model, module}: a module, one of the user's datasets or a
 * registered model. */
import { IN, OUT, portId } from './document.js';
import { moduleOf, refusal } from './rules.js';

/** Whether the palette's search shows an entry for query `q`: its text, or its module's label,
 * kind, category or description, has it (case aside). The palette's search box and the quick
 * search both ask this. */
export function entryMatches(label, module, q) {
  const query = q.trim().toLowerCase();
  if (!query) return true;
  const m = module || {};
  return [label, m.label, m.kind, m.category, m.description].filter(Boolean).join(' ').toLowerCase().includes(query);
}

/** The entries the query finds: those whose own label starts with it first, then those whose
 * label has it, then the rest; in the palette's order within each. */
export function ranked(entries, q) {
  const query = q.trim().toLowerCase();
  const rank = (e) => {
    const label = e.label.toLowerCase();
    if (!query || label.startsWith(query)) return 0;
    return label.includes(query) ? 1 : 2;
  };
  return entries.filter((e) => entryMatches(e.text || e.label, e.module, q))
    .map((e, i) => ({ e, i, r: rank(e) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.e);
}

/**
 * The link from node `from` ({id, kind}) to a new node `doc` ({id, kind}): from output `port`
 * (as the canvas names it: a link dropped on the blank canvas) or else its first output that
 * feeds it, to the new module's first input that accepts it, as the canvas's rules say
 * (rules.js). Returns {from, fromPort, toPort}, or null when no input accepts it.
 */
export function feedOf(modules, from, doc, links, port = null) {
  const src = moduleOf(modules, from);
  const dst = moduleOf(modules, doc);
  if (!src || !dst) return null;
  const nodes = new Map([[from.id, from], [doc.id, { id: doc.id, kind: doc.kind }]]);
  for (const out of src.outputs.filter((o) => !port || portId(OUT, o.name) === port)) {
    for (const inp of dst.inputs) {
      const link = { id: null, from: { node: from.id, port: out.name }, to: { node: doc.id, port: inp.name } };
      if (!refusal(modules, nodes, [...links, link], link)) return { from: from.id, fromPort: portId(OUT, out.name), toPort: portId(IN, inp.name) };
    }
  }
  return null;
}

/**
 * The line under the search box of a link dropped from output `output` ({label, what}) of the node
 * named `fromLabel`: what the module chosen is linked from, or, when no entry's module takes that
 * output (`taken` false), that nothing does, once, rather than every module marked "not linked".
 */
export function droppedNote(fromLabel, output, taken) {
  if (taken) return `links from ${fromLabel}`;
  return `Nothing takes ${fromLabel}: no module has an input for ${output ? output.what || output.label : 'it'}. `
    + 'Type to add a module without a link.';
}
