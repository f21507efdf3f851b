/* A node's progress as its status line shows it (pure): how far it is (epoch 3/10, from its metric
 * events), how long it has been running, its last loss and accuracy; the last figures on hover. */
import { firstLine, nodeStatusText } from './format.js';
import { statusLabel } from './statusbook.js';

/** Note a metric event in progress[node]: {step, steps, values: {name: last value}}. */
export function noteProgress(progress, ev) {
  const p = progress[ev.node] || (progress[ev.node] = { step: null, steps: null, values: {} });
  const d = ev.data || {};
  if (d.step != null && (p.step == null || d.step > p.step)) p.step = d.step;
  if (d.steps != null) p.steps = d.steps;
  if (d.name) p.values[d.name] = d.value;
  return p;
}

// which figures are "the loss" and "the accuracy": Train PyTorch Model's names first, then any
const LOSS = ['training_loss', 'loss'];
const ACCURACY = ['validation_top1_accuracy', 'validation_accuracy', 'accuracy'];

function pick(values, names, ending) {
  const name = names.find((n) => Object.hasOwn(values, n)) || Object.keys(values).find((n) => n.endsWith(ending));
  return name ? values[name] : null;
}

/** A figure in three significant digits: 0.412, 12.4, 0.00123. */
export const figure = (v) => (Number.isInteger(v) ? String(v) : Number(v.toPrecision(3)).toString());

/** "12 s", "1 min 12 s", "2 h 5 min": a running node's time so far, in whole seconds. */
export function elapsed(s) {
  const t = Math.max(0, Math.floor(s));
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${t % 60} s`;
  return `${Math.floor(t / 3600)} h ${Math.floor((t % 3600) / 60)} min`;
}

/**
 * How far the server's clock is ahead of the browser's, in ms: its time in an answer (`now`) against
 * the middle of the request (sent and received on the browser's clock); 0 without one. Times the
 * server gives (a node's start) are then counted against Date.now() + this, not a clock set wrong.
 */
export function clockOffset(serverIso, sentAt, receivedAt) {
  const server = serverIso ? Date.parse(serverIso) : NaN;
  return Number.isFinite(server) ? Math.round(server - (sentAt + receivedAt) / 2) : 0;
}

/** Seconds from an ISO time to `now` (ms since the epoch); null without a time. */
export const since = (iso, now) => (iso ? Math.max(0, (now - Date.parse(iso)) / 1000) : null);

/** "epoch 3/10 done" (unit: the module's metric_step; total: the step count it was given, if
 * known), or ''. "done": the step last reported is over (the next one is under way). */
export function stepText(p, unit, total) {
  if (!p || p.step == null) return '';
  const steps = p.steps ?? total;
  return `${unit} ${p.step}${steps ? `/${steps}` : ''} done`;
}

/** "loss 0.412 · acc 0.883", or '' without either. */
export function figuresText(p) {
  if (!p) return '';
  const loss = pick(p.values, LOSS, 'loss');
  const acc = pick(p.values, ACCURACY, 'accuracy');
  return [loss != null ? `loss ${figure(loss)}` : '', acc != null ? `acc ${acc.toFixed(3)}` : ''].filter(Boolean).join(' · ');
}

/** Every last figure, a line each ("epoch 3 of 10", "training_loss 0.412"...): the hover text. */
export function figuresTitle(p, unit, total) {
  if (!p) return '';
  const steps = p.steps ?? total;
  const head = p.step != null ? [`${unit} ${p.step}${steps ? ` of ${steps}` : ''}`] : [];
  return head.concat(Object.entries(p.values).map(([k, v]) => `${k} ${figure(v)}`)).join('\n');
}

/**
 * What a node shows under its label: {status, progress, title}. A running node: "running · epoch
 * 3/10 done · 1 min 12 s" then "loss 0.412 · acc 0.883"; one that ended: "completed · 1 min 3 s", its
 * last figures on hover. info: the run's node ({status, started_at, duration}); live: whether it
 * is running; p: its progress; unit, total: as stepText; now: ms since the epoch.
 */
export function nodeLines(info, live, p, { unit = 'step', total = null, now = Date.now() } = {}) {
  const figures = figuresTitle(p, unit, total);
  const title = info && info.error ? [firstLine(info.error, 300), figures].filter(Boolean).join('\n') : figures; // why it failed first
  if (!live || !info) return { status: nodeStatusText(info), progress: '', title };
  const time = since(info.started_at, now);
  const status = [statusLabel(info.status), stepText(p, unit, total), time != null ? elapsed(time) : ''].filter(Boolean).join(' · ');
  return { status, progress: figuresText(p), title };
}
