/* The Form tab of the sweep dialog: draws a sweep form (sweepconfig.js) and writes each edit
 * back into it. Every field sits in a box named by the config key it sets (data-sweep-field),
 * with an error line under it, so that the server's problems land next to their fields. */
import { h } from './dom.js';
import { EXPRESSIONS, FIELD_HINTS, GOALS, POLICIES, POLICY_DEFAULTS, POLICY_HINTS, SAMPLINGS, expressionHint, rowFor } from './sweepconfig.js';

const LABELS = {
  max_total_runs: 'Max total runs', max_concurrent_runs: 'Max concurrent runs',
  max_duration_minutes: 'Max duration (minutes)', seed: 'Seed',
  min_value: 'min exponent', max_value: 'max exponent', stop_grace_seconds: 'Stop grace (seconds)',
};
const labelOf = (k) => LABELS[k] || k.replace(/_/g, ' ');

const options = (list, current) => {
  const all = list.includes(current) || !current ? list : [...list, current]; // a value from YAML is kept
  return all.map((v) => h('option', { value: v, selected: v === current }, v));
};

/** A box for a config key: its content, then its error line. */
const box = (key, cls, ...content) => h('div', { class: `sw-field ${cls || ''}`, 'data-sweep-field': key }, ...content,
  h('p', { class: 'field-error', 'data-error-for': key, role: 'alert' }));

function labelled(id, label, input, hint) {
  input.id = id;
  return h('div', { class: 'sw-input' }, h('label', { for: id }, label), input, hint ? h('span', { class: 'help' }, hint) : null);
}

function rowEl(row, i, grid) {
  const known = EXPRESSIONS[row.expression];
  const exprs = grid ? ['choice'] : Object.keys(EXPRESSIONS);
  const fields = known ? known.map((k) => labelled(`sw-row-${i}-${k}`, labelOf(k),
    h('input', { type: k === 'values' ? 'text' : 'number', step: 'any', value: row.fields[k] || '', 'data-row': i, 'data-value': k,
      class: k === 'values' ? 'wide' : null }), k === 'values' ? FIELD_HINTS[k] : null))
    : [h('span', { class: 'help' }, `values ${JSON.stringify(row.values || [])} (edit them in YAML)`)];
  const swept = h('input', { type: 'checkbox', id: `sw-row-${i}-swept`, checked: row.swept, 'data-row': i, 'data-swept': '' });
  return box(`row:${row.name}`, `sw-row${row.swept ? '' : ' off'}`,
    h('div', { class: 'sw-row-head' },
      h('label', { class: 'check', for: `sw-row-${i}-swept` }, swept, h('strong', {}, row.name), h('span', { class: 'muted' }, row.type || 'not declared')),
      labelled(`sw-row-${i}-expression`, 'expression', h('select', { 'data-row': i, 'data-expression': '', disabled: !row.swept }, options(exprs, row.expression)))),
    row.swept ? h('div', { class: 'sw-values' }, fields, h('span', { class: 'help sw-hint' }, expressionHint(row.expression, row.fields)))
      : fixedEl(row, i));
}

/** An unswept declared parameter: the value every trial gets. */
function fixedEl(row, i) {
  if (!row.type) return null;
  if (row.argument) return h('div', { class: 'sw-values' }, h('span', { class: 'help' }, 'not swept: each module passes its own value'));
  const input = row.type === 'bool'
    ? h('select', { 'data-row': i, 'data-fixed': '' }, ['true', 'false'].map((v) => h('option', { value: v, selected: String(row.fixed) === v }, v)))
    : h('input', { type: row.type === 'string' ? 'text' : 'number', step: 'any', value: row.fixed, 'data-row': i, 'data-fixed': '' });
  return h('div', { class: 'sw-values' }, labelled(`sw-row-${i}-fixed`, 'every trial takes', input, 'not swept'));
}

/**
 * The form's elements. form: as sweepconfig.js makes it; metrics: the names a primary metric may
 * take; params: the pipeline's parameters; redraw() is called after an edit that changes which
 * fields there are.
 */
export function sweepFormEl(form, metrics, params, redraw) {
  const setExpression = (i, expression) => {
    const row = form.rows[i];
    row.expression = expression;
    row.fields = rowFor(params.find((p) => p.name === row.name) || { name: row.name, type: row.type }, expression, row.fields);
    delete row.values;
  };
  const grid = form.sampling === 'grid';
  const policyFields = (POLICIES[form.policy.type] || Object.keys(form.policy.fields)).map((k) => labelled(`sw-policy-${k}`, labelOf(k),
    h('input', { type: 'number', step: 'any', value: form.policy.fields[k] || '', 'data-policy': k }), POLICY_HINTS[k]));
  const limits = ['max_total_runs', 'max_concurrent_runs', 'max_duration_minutes', 'seed'].map((k) => box(k, 'sw-limit',
    labelled(`sw-${k}`, labelOf(k), h('input', { type: 'number', step: 1, min: k === 'seed' ? 0 : 1, value: form[k], 'data-top': k,
      placeholder: k === 'max_duration_minutes' || k === 'seed' ? 'optional' : null }))));
  const el = h('div', { class: 'sweep-form' },
    box('sampling', '', labelled('sw-sampling', 'Sampling', h('select', { 'data-top': 'sampling' }, options(SAMPLINGS, form.sampling)),
      grid ? 'every combination of the choices (choice only)' : form.sampling === 'bayesian' ? 'TPE: learns from the trials so far' : 'independent draws')),
    h('fieldset', {}, h('legend', {}, 'Parameter space'),
      box('parameter_space', '', form.rows.length ? form.rows.map((r, i) => rowEl(r, i, grid)) : h('p', { class: 'muted' }, 'The pipeline declares no parameters.'))),
    h('fieldset', {}, h('legend', {}, 'Early termination'),
      box('policy', 'sw-policy', labelled('sw-policy-type', 'Policy', h('select', { 'data-policy-type': '' }, options(Object.keys(POLICIES), form.policy.type))),
        h('div', { class: 'sw-values' }, policyFields))),
    h('fieldset', {}, h('legend', {}, 'Primary metric'),
      h('div', { class: 'sw-pair' },
        box('primary_metric_name', '', labelled('sw-primary_metric_name', 'Metric',
          h('select', { 'data-top': 'primary_metric_name' }, metrics.length || form.primary_metric_name ? options(metrics, form.primary_metric_name)
            : h('option', { value: '' }, 'no module of this pipeline emits metrics')))),
        box('primary_metric_goal', '', labelled('sw-primary_metric_goal', 'Goal', h('select', { 'data-top': 'primary_metric_goal' }, options(GOALS, form.primary_metric_goal)))))),
    h('fieldset', {}, h('legend', {}, 'Limits'), h('div', { class: 'sw-limits' }, limits)));

  el.addEventListener('change', (e) => {
    const t = e.target;
    const d = t.dataset;
    if (d.top !== undefined) {
      form[d.top] = t.value;
      if (d.top === 'sampling') {
        if (t.value === 'grid') form.rows.forEach((r, i) => { if (r.swept && r.expression !== 'choice') setExpression(i, 'choice'); });
        redraw();
      }
    } else if (d.swept !== undefined) {
      form.rows[Number(d.row)].swept = t.checked;
      redraw();
    } else if (d.expression !== undefined) {
      setExpression(Number(d.row), t.value);
      redraw();
    } else if (d.value !== undefined) {
      form.rows[Number(d.row)].fields[d.value] = t.value;
      const hint = t.closest('.sw-row').querySelector('.sw-hint');
      hint.textContent = expressionHint(form.rows[Number(d.row)].expression, form.rows[Number(d.row)].fields);
    } else if (d.fixed !== undefined) {
      form.rows[Number(d.row)].fixed = t.value;
    } else if (d.policyType !== undefined) {
      const fields = {};
      for (const k of POLICIES[t.value] || []) fields[k] = form.policy.fields[k] || (k === 'slack_amount' ? '' : POLICY_DEFAULTS[k] || '');
      form.policy = { type: t.value, fields };
      redraw();
    } else if (d.policy !== undefined) {
      form.policy.fields[d.policy] = t.value;
    }
  });
  return el;
}
