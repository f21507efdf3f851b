/* "Parameters in this run" (Outputs + logs): the values a module ran with, frozen at submit, beside
 * those on the canvas now, which may have been edited since (pure). */

const text = (v) => (v === undefined || v === null || v === '' ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/**
 * One row per parameter of `module` (its declaration: params with name, label, default): the value
 * it ran with (`ran`, missing: its default) and, when the canvas now holds another, that one.
 * `now`: the canvas node's data ({parameters, bindings}), or null (the node is gone from the
 * canvas). A parameter bound to a pipeline parameter now is not compared: its value comes at submit.
 * A value the server fills in at submit (a dataset's stored file) is no one's choice: not listed.
 * `datasets` (id -> {name}): a Dataset module's dataset is written by its name, as on the canvas.
 */
export function ranWithRows(module, ran, nowNode, datasets = new Map()) {
  const now = nowNode ? nowNode.parameters || {} : null;
  const bound = (nowNode && nowNode.bindings) || {};
  const params = module ? module.params.filter((p) => !p.filled_by_server) : Object.keys(ran || {}).map((name) => ({ name, label: name }));
  const shown = (p, v) => (module && module.kind === 'dataset' && p.name === 'dataset' && datasets.has(v) ? datasets.get(v).name : text(v));
  return params.map((p) => {
    const value = ran && p.name in ran ? ran[p.name] : p.default;
    const current = now && p.name in now ? now[p.name] : p.default;
    const changed = now !== null && !(p.name in bound) && JSON.stringify(current ?? null) !== JSON.stringify(value ?? null);
    return { name: p.name, label: p.label, value: shown(p, value), now: changed ? shown(p, current) : null };
  });
}
