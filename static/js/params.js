/* Pipeline parameters (pure): the draft's top-level "parameters" ({name, type, default, min?, max?,
 * help}), which module parameter may be bound to which of them, a new one made from a module
 * parameter, the quick checks shown while typing (the server's problems list stays the judge),
 * and the edits that keep nodes' "bindings" ({module param: pipeline param}) in step. */

export const TYPES = ['int', 'float', 'bool', 'string'];
export const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Pipeline parameter types a module parameter of `moduleType` may be bound to. */
const COMPATIBLE = { int: ['int'], float: ['float', 'int'], bool: ['bool'], choice: ['string'], str: ['string'] };
export const compatibleTypes = (moduleType) => COMPATIBLE[moduleType] || [];
export const isCompatible = (moduleParam, param) => compatibleTypes(moduleParam.type).includes(param.type);
/** The pipeline parameters `moduleParam` may be bound to, in the draft's order. */
export const bindable = (moduleParam, params) => (params || []).filter((p) => isCompatible(moduleParam, p));

const ranged = (type) => type === 'int' || type === 'float';

/** A free name: `base`, else base_2, base_3... */
export function freeName(base, taken) {
  const names = new Set(taken);
  const clean = (String(base).replace(/[^A-Za-z0-9_]/g, '_').replace(/^(?=[0-9])/, '_') || 'param').slice(0, 60);
  if (!names.has(clean)) return clean;
  let k = 2;
  while (names.has(`${clean}_${k}`)) k += 1;
  return `${clean}_${k}`;
}

/**
 * A new pipeline parameter from a module parameter (as GET /api/modules describes it) and its
 * value on the node: its name, its type, the value as default, its range (inclusive bounds only:
 * an exclusive bound of a float is left to the module's own check).
 */
export function paramFromModule(moduleParam, value, takenNames) {
  const type = { int: 'int', float: 'float', bool: 'bool' }[moduleParam.type] || 'string';
  const current = value === undefined || value === null ? moduleParam.default : value;
  const param = { name: freeName(moduleParam.name, takenNames), type, default: current === undefined ? null : current };
  if (ranged(type)) {
    const bound = (v, exclusive, step) => {
      if (v === null || v === undefined) return undefined;
      if (!exclusive) return v;
      return type === 'int' ? v + step : undefined;
    };
    const min = bound(moduleParam.min, moduleParam.min_exclusive, 1);
    const max = bound(moduleParam.max, moduleParam.max_exclusive, -1);
    if (min !== undefined) param.min = min;
    if (max !== undefined) param.max = max;
  }
  param.help = moduleParam.help || '';
  return param;
}

/** A blank new parameter. */
export const newParam = (takenNames) => ({ name: freeName('param', takenNames), type: 'float', default: 0, help: '' });

/** A value typed in a field, as its type: numbers as numbers (a bad one kept as typed: the server says why). */
export function parseValue(type, text, checked) {
  if (type === 'bool') return typeof checked === 'boolean' ? checked : text === true || text === 'true';
  if (type === 'string') return text;
  if (String(text).trim() === '') return null;
  const v = Number(text);
  return Number.isNaN(v) ? text : v;
}

/** A parameter after its `type` changed: the default made of that type, a range only for numbers. */
export function withType(param, type) {
  const next = { ...param, type };
  if (!ranged(type)) { delete next.min; delete next.max; }
  if (type === 'bool') next.default = Boolean(param.default);
  else if (type === 'string') next.default = param.default === null || param.default === undefined ? '' : String(param.default);
  else {
    const v = Number(param.default);
    next.default = Number.isNaN(v) || typeof param.default === 'boolean' ? 0 : (type === 'int' ? Math.round(v) : v);
  }
  return next;
}

/** "0.001 .. 1", ">= 0", "<= 9" or '' */
export function rangeText(p) {
  const has = (v) => v !== null && v !== undefined && v !== '';
  if (has(p.min) && has(p.max)) return `${p.min} .. ${p.max}`;
  if (has(p.min)) return `>= ${p.min}`;
  if (has(p.max)) return `<= ${p.max}`;
  return '';
}

/** Why a value does not fit a parameter, or '' (the quick check of a dialog field). */
export function valueProblem(p, v) {
  if (p.type === 'bool') return typeof v === 'boolean' ? '' : 'must be true or false';
  if (p.type === 'string') return typeof v === 'string' ? '' : 'must be text';
  if (v === null || v === undefined) return 'a number is needed';
  if (typeof v !== 'number' || !Number.isFinite(v)) return `${JSON.stringify(v)} is not a number`;
  if (p.type === 'int' && !Number.isInteger(v)) return `${v} is not a whole number`;
  if (typeof p.min === 'number' && v < p.min) return `${v} is below the minimum ${p.min}`;
  if (typeof p.max === 'number' && v > p.max) return `${v} is above the maximum ${p.max}`;
  return '';
}

/** The quick checks of a parameter among all of them: {field: message} (name, min, max, default). */
export function paramProblems(p, all) {
  const out = {};
  if (!NAME_RE.test(p.name || '')) out.name = `${JSON.stringify(p.name || '')} is not a valid name: letters, digits and _, not starting with a digit`;
  else if (all.filter((q) => q.name === p.name).length > 1) out.name = `${p.name} is declared twice`;
  if (ranged(p.type)) {
    for (const k of ['min', 'max']) if (p[k] !== undefined && typeof p[k] !== 'number') out[k] = `${JSON.stringify(p[k])} is not a number`;
    if (!out.min && !out.max && typeof p.min === 'number' && typeof p.max === 'number' && p.min > p.max) out.max = `the maximum ${p.max} is below the minimum ${p.min}`;
  }
  const bad = valueProblem(p, p.default);
  if (bad) out.default = bad;
  return out;
}

/**
 * The problems of the server about pipeline parameter `name`: its declaration, and each binding
 * to it (those also name their node, and show there too).
 */
export function problemsOfParam(problems, name, index) {
  return (problems || []).filter((p) => {
    if (p.pipeline_parameter === name || p.parameter === name) return true;
    if (p.pipeline_parameter || p.node) return false;
    const t = p.text || p.message || '';
    return t.startsWith(`parameters[${index}]`) || t.startsWith(`parameter ${name}`) || t.startsWith(`${name}:`)
      || new RegExp(`(^|\\W)${name}(\\W|$)`).test(t.split(':')[0]);
  });
}

/** A node's bindings in full: "learning_rate=@lr, epochs=@epochs", or ''. */
export function bindingText(bindings) {
  return Object.entries(bindings || {}).map(([param, to]) => `${param}=@${to}`).join(', ');
}

/** The same, short, for the line on the node: a parameter bound to its namesake is "@epochs". */
export function bindingShort(bindings) {
  return Object.entries(bindings || {}).map(([param, to]) => (param === to ? `@${to}` : `${param}=@${to}`)).join(', ');
}

/** A node's data with `param` bound to `to` (or unbound when `to` is null). */
export function withBinding(data, param, to) {
  const bindings = { ...(data.bindings || {}) };
  if (to) bindings[param] = to; else delete bindings[param];
  const next = { ...data, bindings };
  if (!Object.keys(bindings).length) delete next.bindings;
  return next;
}

/**
 * Node data changes that follow a renamed (to = new name) or removed (to = null) parameter:
 * [{id, data}] for the nodes whose bindings name `from`. A removed parameter unbinds: the node
 * keeps the value its field had.
 */
export function followRename(nodes, from, to) {
  const out = [];
  for (const { id, data } of nodes) {
    const b = data.bindings || {};
    const hit = Object.keys(b).filter((k) => b[k] === from);
    if (!hit.length) continue;
    let next = data;
    for (const k of hit) next = withBinding(next, k, to);
    out.push({ id, data: next });
  }
  return out;
}

/** How many bindings of the nodes name parameter `name`. */
export const usesOf = (nodes, name) => nodes.reduce((n, { data }) => n + Object.values(data.bindings || {}).filter((v) => v === name).length, 0);

/** The problems of a submit (400) about the value of pipeline parameter `name`, wherever they point. */
export function valueProblemsOf(problems, name) {
  const word = new RegExp(`(^|[^A-Za-z0-9_])${name}([^A-Za-z0-9_]|$)`);
  return (problems || []).filter((p) => p.parameter === name || p.pipeline_parameter === name || word.test(p.text || p.message || ''));
}
