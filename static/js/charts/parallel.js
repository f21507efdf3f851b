/* The sweep's parallel-coordinates chart: one vertical axis per swept parameter, then the primary
 * metric; one line per trial given (the page gives the finished ones) through its values,
 * coloured by its metric (dark: better).
 * A log-scaled parameter (loguniform, lognormal and their q- forms) gets a log axis; a choice of
 * words gets its choices, evenly spaced. The geometry is pure; drawParallel() draws it as SVG. */
import { ramp } from './colours.js';
import { h, svg } from '../dom.js';
import { formatNumber, formatValue } from '../values.js';

const LOG_EXPRESSIONS = new Set(['loguniform', 'qloguniform', 'lognormal', 'qlognormal']);

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

/** The trials drawn: those with a primary metric value. */
export const plotted = (sweep) => (sweep.trials || []).filter((t) => isNumber(t.value));

/** Where the configuration says a parameter's values lie, as [low, high] (null: it does not say). */
function declaredRange(spec) {
  const v = (spec && spec.values) || [];
  switch (spec && spec.expression) {
    case 'uniform': case 'quniform': return [v[0], v[1]];
    case 'loguniform': case 'qloguniform': return [Math.exp(v[0]), Math.exp(v[1])];
    case 'randint': return [0, v[0] - 1];
    default: return null;
  }
}

function axisFor(name, label, values, spec) {
  const present = values.filter((v) => v !== null && v !== undefined);
  const choice = Boolean(spec) && spec.expression === 'choice';
  if (choice || !present.length || !present.every(isNumber)) {
    // a choice shows its choices only (16 and 32, not 24), numbers in ascending order
    const declared = choice ? [...(spec.values || [])] : [];
    if (declared.every(isNumber)) declared.sort((a, b) => a - b);
    const categories = [...declared, ...present].map(formatValue).filter((c, i, all) => all.indexOf(c) === i);
    return { name, label, kind: 'category', categories };
  }
  const range = (declaredRange(spec) || []).filter(isNumber);
  const log = Boolean(spec) && LOG_EXPRESSIONS.has(spec.expression) && [...present, ...range].every((v) => v > 0);
  const whole = [...present, ...range].every(Number.isInteger);
  return { name, label, kind: log ? 'log' : 'linear', lo: Math.min(...present, ...range), hi: Math.max(...present, ...range), whole };
}

/** One axis per swept parameter (in the sweep's order), then the primary metric's. */
export function axesOf(sweep) {
  const trials = plotted(sweep);
  const space = Object.fromEntries(((sweep.config && sweep.config.parameter_space) || []).map((p) => [p.name, p]));
  const axes = (sweep.swept || []).map((name) => axisFor(name, name, trials.map((t) => (t.values || {})[name]), space[name]));
  const metric = (sweep.primary_metric && sweep.primary_metric.name) || 'primary metric';
  axes.push({ ...axisFor('__metric__', metric, trials.map((t) => t.value), null), metric: true });
  return axes;
}

/** A value's height on its axis, from 0 (bottom) to 1 (top); null for a value the axis lacks. */
export function position(axis, value) {
  if (axis.kind === 'category') {
    const i = axis.categories.indexOf(formatValue(value));
    if (i < 0) return null;
    return axis.categories.length === 1 ? 0.5 : i / (axis.categories.length - 1);
  }
  if (!isNumber(value) || (axis.kind === 'log' && value <= 0)) return null;
  const f = axis.kind === 'log' ? Math.log10 : (x) => x;
  const [lo, hi] = [f(axis.lo), f(axis.hi)];
  return hi === lo ? 0.5 : (f(value) - lo) / (hi - lo);
}

const EPS = 1e-9;

/** Round values for a linear axis: steps of 1, 2 or 5 times a power of ten, four to six of them
 * (whole steps on an axis of whole numbers: no "2.5 epochs"). */
function linearValues(lo, hi, whole) {
  const rough = (hi - lo) / 5;
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = /** @type {number} */ ([1, 2, 5, 10].map((k) => k * power).find((s) => s >= rough * (1 - EPS))); // 10 * power at most
  if (whole) step = Math.max(1, Math.round(step));
  const values = [];
  for (let v = Math.ceil(lo / step - EPS) * step; v <= hi + step * EPS; v += step) values.push(Number(v.toPrecision(12)));
  return values;
}

/** A log axis: its powers of ten (every other one past six), else its ends. */
function logValues(lo, hi) {
  const decades = [];
  for (let k = Math.ceil(Math.log10(lo) - EPS); k <= Math.floor(Math.log10(hi) + EPS); k += 1) decades.push(10 ** k);
  if (decades.length < 2) return [lo, hi];
  return decades.length > 6 ? decades.filter((_, i) => i % 2 === 0) : decades;
}

/** The labels written beside an axis: each category, or round values along it. */
export function ticks(axis) {
  if (axis.kind === 'category') return axis.categories.map((c) => ({ at: position(axis, c), text: c }));
  if (axis.lo === axis.hi) return [{ at: 0.5, text: formatNumber(axis.lo) }];
  const values = axis.kind === 'log' ? logValues(axis.lo, axis.hi) : linearValues(axis.lo, axis.hi, axis.whole);
  return values.map((v) => ({ at: position(axis, v), text: formatNumber(v) }));
}

/** One line per plotted trial: its heights on each axis, its colour, whether it is the best. */
export function linesOf(sweep, axes) {
  const metricAxis = axes[axes.length - 1];
  const minimize = sweep.primary_metric && sweep.primary_metric.goal === 'minimize';
  return plotted(sweep).map((t) => {
    const values = axes.map((a) => (a.metric ? t.value : (t.values || {})[a.name]));
    const height = position(metricAxis, t.value);
    const goodness = height === null ? 0 : minimize ? 1 - height : height;
    const title = `Trial ${t.number}: ${axes.map((a, i) => `${a.label} ${formatValue(values[i])}`).join(', ')}`;
    return { number: t.number, best: Boolean(t.best), at: axes.map((a, i) => position(a, values[i])), colour: ramp(goodness), title };
  }).sort((a, b) => Number(a.best) - Number(b.best)); // the best one drawn last, on top
}

/** Draw the chart into `container` (as wide as it is), replacing what it held. */
export function drawParallel(container, sweep) {
  if (!plotted(sweep).length) { // no empty axes: say what will come
    const metric = (sweep.primary_metric && sweep.primary_metric.name) || 'its primary metric';
    container.replaceChildren(h('p', { class: 'muted parallel-empty' },
      `No trial has ended with a value of ${metric} yet: each one draws a line here as it ends.`));
    return;
  }
  const axes = axesOf(sweep);
  const width = Math.max(360, container.clientWidth || 600);
  const height = 320;
  const m = { top: 40, bottom: 16, left: 56, right: 80 };
  const xs = axes.map((a, i) => (axes.length === 1 ? width / 2 : m.left + (i * (width - m.left - m.right)) / (axes.length - 1)));
  const y = (at) => m.top + (1 - at) * (height - m.top - m.bottom);
  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `Parallel coordinates: ${axes.map((a) => a.label).join(', ')}` });
  for (const line of linesOf(sweep, axes)) {
    const points = line.at.map((at, i) => (at === null ? null : `${xs[i].toFixed(1)},${y(at).toFixed(1)}`)).filter(Boolean);
    root.append(svg('polyline', { points: points.join(' '), fill: 'none', stroke: line.colour, 'stroke-width': line.best ? 4 : 2,
      'stroke-opacity': 0.9, 'data-trial': line.number, class: line.best ? 'trial-line best' : 'trial-line' }, svg('title', {}, line.title)));
  }
  axes.forEach((a, i) => {
    const anchor = i === 0 ? 'start' : i === axes.length - 1 ? 'end' : 'middle';
    const labelX = i === 0 ? xs[i] - 20 : i === axes.length - 1 ? xs[i] + 20 : xs[i];
    root.append(svg('line', { x1: xs[i], x2: xs[i], y1: y(1), y2: y(0), stroke: '#57606a', 'stroke-width': 1 }),
      svg('text', { x: labelX, y: 16, 'text-anchor': anchor, 'font-weight': 600, 'font-size': 12, class: 'axis-label',
        'data-axis': a.metric ? 'metric' : a.name }, `${a.label}${a.kind === 'log' ? ' (log)' : ''}`));
    // the first axis's figures on its left, where no line goes; the others' on a plate the lines pass under
    const left = i === 0;
    for (const t of ticks(a)) {
      const w = t.text.length * 6.4 + 4; // about: 11 px digits
      if (!left) root.append(svg('rect', { x: xs[i] + 3, y: y(t.at) - 7, width: w, height: 14, rx: 2, class: 'tick-plate' }));
      root.append(svg('text', { x: left ? xs[i] - 5 : xs[i] + 5, y: y(t.at) + 4, 'text-anchor': left ? 'end' : 'start', 'font-size': 11,
        fill: '#57606a', class: 'tick' }, t.text));
    }
  });
  container.replaceChildren(root);
}
