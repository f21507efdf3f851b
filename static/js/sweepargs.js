// The script arguments a sweep may name, as HyperDrive's sweep files name them (`name: --learning_rate`):
// each flag a component on the canvas passes one of its parameters to (its command's
// `--learning_rate {params.learning_rate}`; GET /api/modules: component.arguments), typed and
// ranged from that parameter, its value the first such node's. The server maps the flag to every
// node that passes it (designer/engine/sweep_arguments.py); the dialog lists it beside the
// pipeline's parameters, not swept until ticked.
import { paramFromModule } from './params.js';
import { moduleOf } from './rules.js';

/**
 * @param {Array<{kind: string, version?: number, parameters?: Record<string, unknown>}>} nodes the canvas's node data
 * @param {any} modules the catalogue's modules (a Map by kind)
 * @returns {Array<Record<string, any>>} one pipeline-parameter-like entry per flag, `argument: true`
 */
export function scriptArguments(nodes, modules) {
  const found = new Map();
  for (const node of nodes) {
    const m = moduleOf(modules, node);
    const flags = m && m.component && m.component.arguments;
    if (!flags) continue;
    for (const [flag, name] of Object.entries(flags)) {
      const declared = (m.params || []).find((/** @type {any} */ p) => p.name === name);
      if (found.has(flag) || !declared) continue;
      const param = paramFromModule(declared, (node.parameters || {})[name], []);
      found.set(flag, { ...param, name: flag, argument: true });
    }
  }
  return [...found.values()];
}

/** A script argument's name (`--learning_rate`, `-lr`): never a pipeline parameter's. */
export const isArgument = (/** @type {unknown} */ name) => typeof name === 'string' && name.startsWith('-');
