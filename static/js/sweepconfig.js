/* A sweep's configuration (pure), in HyperDrive's vocabulary: the form the dialog edits and the
 * config sent to POST /api/sweeps, each made from the other; the YAML text of a config (the yaml
 * library is passed in, so that Node's tests use the same code); which field a problem names. */

import { isArgument } from './sweepargs.js';
import SCHEMA from './sweepschema.js';

// the vocabulary of a configuration, read from its JSON Schema (designer/engine/sweep_schema.py, which
// the server makes from its own checker's declarations and serves at /api/schemas/sweep-config.json)
const PROPS = SCHEMA.properties;
/** @type {string[]} */
export const SAMPLINGS = PROPS.sampling.examples;
/** @type {string[]} */
export const GOALS = PROPS.primary_metric_goal.examples;

/** Each expression's values, in order (choice: a list of any length). */
export const EXPRESSIONS = Object.fromEntries(PROPS.parameter_space.items.oneOf.map((/** @type {any} */ e) => [
  e.properties.expression.title, e.properties.values.prefixItems ? e.properties.values.prefixItems.map((/** @type {any} */ v) => v.title) : ['values']]));

/** What each value field means, shown beside it. */
export const FIELD_HINTS = {
  values: 'comma-separated', upper: 'values 0 .. upper-1', min_value: 'exponent: e^min', max_value: 'exponent: e^max', q: 'step',
};

/** The hint of an expression's row: "e^-9 .. e^-2" for a log-uniform one. */
export function expressionHint(expression, fields) {
  const f = fields || {};
  if (expression === 'loguniform' || expression === 'qloguniform') return `e^${f.min_value || 'min'} .. e^${f.max_value || 'max'} (the bounds are exponents)`;
  if (expression === 'lognormal' || expression === 'qlognormal') return 'exp of a normal(mu, sigma)';
  if (expression === 'randint') return `0 .. ${f.upper ? Number(f.upper) - 1 : 'upper-1'}`;
  if (expression === 'choice') return 'one of the values';
  return '';
}

/** Each early-termination policy and its fields. */
export const POLICIES = Object.fromEntries(PROPS.policy.anyOf.filter((/** @type {any} */ p) => p.title).map((/** @type {any} */ p) => [
  p.title, Object.keys(p.properties).filter((k) => k !== 'type')]));
/** What each policy field means (HyperDrive's meanings), shown under it. */
export const POLICY_HINTS = {
  evaluation_interval: 'epochs between two checks', delay_evaluation: 'epochs before the first check',
  slack_factor: 'ratio to the best (or slack amount)', slack_amount: 'absolute (or slack factor)',
  truncation_percentage: '% of the trials cut at each check',
  stop_grace_seconds: 'a stopped trial\'s script is ended this long after it is asked (empty: 60)',
};
export const POLICY_DEFAULTS = { evaluation_interval: '1', slack_factor: '0.1', delay_evaluation: '0', truncation_percentage: '20' };
const NOT_LIMITS = new Set(['sampling', 'parameter_space', 'policy', 'primary_metric_name', 'primary_metric_goal']);
export const LIMITS = Object.keys(PROPS).filter((k) => !NOT_LIMITS.has(k));
const KNOWN = new Set(Object.keys(PROPS));

const str = (v) => (v === null || v === undefined ? '' : String(v));

/** A number typed in a field; empty -> null; not a number -> kept as typed (the server names it). */
export function num(text) {
  const t = str(text).trim();
  if (t === '') return null;
  const v = Number(t);
  return Number.isNaN(v) ? t : v;
}

/** "16, 32" -> [16, 32] for a number parameter, [true, false] for a bool one, strings otherwise. */
export function choiceValues(text, type) {
  const items = str(text).split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (type === 'bool') return items.map((s) => (s === 'true' ? true : s === 'false' ? false : s));
  if (type === 'int' || type === 'float' || type === undefined) return items.map((s) => num(s));
  return items;
}

/** A row's fields for a new expression: the values it had by the same name, else a start. */
export function rowFor(param, expression, old = {}) {
  const fields = {};
  for (const k of EXPRESSIONS[expression] || []) fields[k] = old[k] !== undefined ? old[k] : '';
  if (expression === 'choice' && !fields.values) fields.values = param.type === 'bool' ? 'true, false' : str(param.default);
  if (expression === 'uniform' && !fields.low && !fields.high) {
    fields.low = str(param.min !== undefined ? param.min : 0);
    fields.high = str(param.max !== undefined ? param.max : 1);
  }
  if (expression === 'loguniform' && !fields.min_value && !fields.max_value) { fields.min_value = '-9'; fields.max_value = '-2'; }
  return fields;
}

/** The form of a new sweep: every parameter swept (numbers over a range, the rest by choice). */
export function defaultForm(params, metrics) {
  const metric = metrics.includes('validation_top1_accuracy') ? 'validation_top1_accuracy' : (metrics[0] || '');
  return {
    sampling: 'random',
    rows: params.map((p) => {
      const expression = p.type === 'float' ? 'uniform' : 'choice';
      // a component's script argument (sweepargs.js) waits to be ticked: the node keeps its value until then
      return { name: p.name, type: p.type, swept: !p.argument, expression, fields: rowFor(p, expression), fixed: str(p.default), argument: !!p.argument };
    }),
    policy: { type: 'NoTerminationPolicy', fields: {} },
    primary_metric_name: metric,
    primary_metric_goal: /loss|error/.test(metric) ? 'minimize' : 'maximize',
    max_total_runs: '8', max_concurrent_runs: '2', max_duration_minutes: '', seed: '',
    extra: {},
  };
}

/** The config a form stands for. */
export function formToConfig(form) {
  const config = { ...form.extra, sampling: form.sampling };
  config.parameter_space = form.rows.filter((r) => r.swept).map((r) => {
    const keys = EXPRESSIONS[r.expression];
    let values;
    if (r.expression === 'choice') values = choiceValues(r.fields.values, r.type);
    else if (keys) values = keys.map((k) => num(r.fields[k]));
    else values = r.values || [];
    return { name: r.name, expression: r.expression, values };
  });
  const policy = { type: form.policy.type };
  for (const k of POLICIES[form.policy.type] || Object.keys(form.policy.fields)) {
    const v = num(form.policy.fields[k]);
    if (v !== null) policy[k] = v;
  }
  config.policy = policy;
  config.primary_metric_name = form.primary_metric_name;
  config.primary_metric_goal = form.primary_metric_goal;
  for (const k of LIMITS) {
    const v = num(form[k]);
    if (v !== null) config[k] = v;
  }
  return config;
}

/**
 * The form of a config (from YAML): a row per item of its parameter_space, in its order (a name
 * the pipeline does not declare too: the server names it), then the pipeline's other parameters,
 * each at a fixed value (`fixed`: as typed before, else its default).
 */
export function configToForm(config, params, fixed = {}) {
  const c = config && typeof config === 'object' && !Array.isArray(config) ? config : {};
  const space = Array.isArray(c.parameter_space) ? c.parameter_space : [];
  const typeOf = new Map(params.map((p) => [p.name, p.type]));
  const rows = [];
  for (const item of space) {
    const s = item && typeof item === 'object' ? item : {};
    const expression = typeof s.expression === 'string' ? s.expression.toLowerCase() : s.expression; // Choice = choice
    const keys = EXPRESSIONS[expression];
    const values = Array.isArray(s.values) ? s.values : [];
    const fields = {};
    if (expression === 'choice') fields.values = values.map(str).join(', ');
    else if (keys) keys.forEach((k, i) => { fields[k] = str(values[i]); });
    const row = { name: str(s.name), type: typeOf.get(s.name), swept: true, expression: str(expression), fields, argument: isArgument(s.name) };
    if (!keys) row.values = values; // an unknown expression: kept as written
    rows.push(row);
  }
  // the parameters it does not sweep follow, unticked (in the config's order first: a problem's index stays right)
  for (const p of params) {
    if (rows.some((r) => r.name === p.name)) continue;
    const expression = p.type === 'float' ? 'uniform' : 'choice';
    rows.push({ name: p.name, type: p.type, swept: false, expression, fields: rowFor(p, expression), fixed: fixed[p.name] !== undefined ? fixed[p.name] : str(p.default), argument: !!p.argument });
  }
  const pol = c.policy && typeof c.policy === 'object' ? c.policy : {};
  const { type = 'NoTerminationPolicy', ...polFields } = pol;
  const extra = Object.fromEntries(Object.entries(c).filter(([k]) => !KNOWN.has(k)));
  const form = {
    sampling: str(c.sampling || 'random').toLowerCase().replace(/parametersampling$/, ''), rows, // RandomParameterSampling = random
    policy: { type: str(type), fields: Object.fromEntries(Object.entries(polFields).map(([k, v]) => [k, str(v)])) },
    primary_metric_name: str(c.primary_metric_name), primary_metric_goal: str(c.primary_metric_goal || 'maximize'), extra,
  };
  for (const k of LIMITS) form[k] = str(c[k]);
  return form;
}

/** The YAML text of a config: block style, a parameter's values and the policy on one line each. */
export function configYaml(config, YAML) {
  const doc = new YAML.Document(config);
  (config.parameter_space || []).forEach((_, i) => {
    const node = doc.getIn(['parameter_space', i], true);
    if (node) node.flow = true;
  });
  const policy = doc.get('policy', true);
  if (policy) policy.flow = true;
  return doc.toString({ lineWidth: 0 });
}

/** The config of a YAML text: {config} or {error: "line 3: ..."}. */
export function parseYaml(text, YAML) {
  try {
    const config = YAML.parse(text);
    if (!config || typeof config !== 'object' || Array.isArray(config)) return { error: 'the YAML must be a mapping (sampling: ..., parameter_space: ...)' };
    return { config };
  } catch (/** @type {any} */ e) { // YAML's errors say where (linePos)
    const where = e.linePos && e.linePos[0] ? `line ${e.linePos[0].line}: ` : '';
    return { error: `${where}${String(e.message).split('\n')[0]}` };
  }
}

/**
 * The field a problem of POST /api/sweeps names: "row:<parameter>" for a parameter_space item,
 * the top-level key otherwise ("policy", "max_concurrent_runs"...), or "" for none.
 * Problems name their field in `field` or at the start of their text ("parameter_space[1]
 * (batch_size): ...", "policy.slack_factor: ..."); `config` maps an item's index to its name.
 */
export function problemField(problem, config) {
  const text = problem.text || problem.message || '';
  const path = problem.field || (text.includes(':') ? text.slice(0, text.indexOf(':')) : '');
  const m = /^\s*([A-Za-z_]+)(?:\[(\d+)\])?\s*(?:\(([^)]*)\))?/.exec(path);
  if (!m) return '';
  const [, key, index, name] = m;
  if (key === 'parameter_space') {
    if (name) return `row:${name}`;
    if (problem.param && problem.field) return `row:${problem.param}`;
    const item = index !== undefined && config && Array.isArray(config.parameter_space) ? config.parameter_space[Number(index)] : null;
    return item && item.name ? `row:${item.name}` : 'parameter_space';
  }
  return KNOWN.has(key) || key === 'config' || key === 'name' ? key : '';
}

/** The value typed for each row: {name: text} (kept when the YAML tab rebuilds the form). */
export const fixedOf = (form) => Object.fromEntries(form.rows.filter((r) => r.fixed !== undefined).map((r) => [r.name, r.fixed]));

/**
 * The values of the declared parameters the sweep does not sweep ("parameters" of POST
 * /api/sweeps): numbers as numbers, bools from "true"/"false", a bad number as typed.
 */
export function fixedValues(form) {
  const out = {};
  for (const r of form.rows) {
    if (r.swept || !r.type || r.fixed === undefined || r.argument) continue; // an unswept argument: the node's own value
    if (r.type === 'bool') out[r.name] = r.fixed === 'true' || r.fixed === true;
    else if (r.type === 'string') out[r.name] = r.fixed;
    else out[r.name] = num(r.fixed);
  }
  return out;
}
