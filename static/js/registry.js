/* The model registry and the endpoints as the pages write them (pure, but for deploy()): the API's
 * paths, a name made name-safe, tags typed as "key=value", a key masked, metrics and sizes. */
import { api, errorOf } from './api.js';

export const registryPaths = {
  models: '/api/models',
  model: (name) => `/api/models/${encodeURIComponent(name)}`,
  version: (name, v) => `/api/models/${encodeURIComponent(name)}/versions/${v}`,
  endpoints: '/api/endpoints',
  endpoint: (name) => `/api/endpoints/${encodeURIComponent(name)}`,
  keys: (name) => `/api/endpoints/${encodeURIComponent(name)}/keys`,
  modelPage: (name) => `/models/${encodeURIComponent(name)}/`,
  endpointPage: (name) => `/endpoints/${encodeURIComponent(name)}/`,
};

/** The node kinds whose output can be registered (their Trained model / ONNX model). */
export const REGISTRABLE = ['train_pytorch_model', 'export_to_onnx'];
/** The port types of a component's output declared as a model (custom_model and mlflow_model are ModelDirectory). */
export const MODEL_TYPES = ['ModelDirectory', 'OnnxModel'];

/**
 * What a node offers to register: [null] for Train PyTorch Model and Export to ONNX (their one
 * model), a component's outputs declared as a model ([{name, label}]) and those made for the node
 * as it ran (`stored`: the names of the node run's outputs; a component's output it did not declare
 * is the MLflow model its script logged), or [] for anything else.
 * module: the node's module as GET /api/modules describes it.
 */
export function registrableOutputs(kind, module, stored = []) {
  if (REGISTRABLE.includes(kind)) return [null];
  if (!module || !module.component) return [];
  const declared = module.outputs || [];
  const made = stored.filter((name) => !declared.some((p) => p.name === name)).map((name) => ({ name, label: name }));
  return declared.filter((p) => MODEL_TYPES.includes(p.type)).map((p) => ({ name: p.name, label: p.label || p.name })).concat(made);
}

/** A node's statuses whose outputs are there to register. */
export const REGISTRABLE_STATUSES = ['completed', 'reused'];
/** registry.py's rule: 1 to 100 letters, digits, '_', '-' or '.', starting with a letter or digit. */
/** The event the Register dialog sends on `document` once a model is registered (My models reads the list again). */
export const REGISTERED = 'model-registered';
export const NAME_MAX = 100;

/** A registered model's default name from a pipeline's: letters, digits, "-", "_" and "." kept, the rest "-". */
export function safeName(text) {
  const name = String(text || '').normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, NAME_MAX).replace(/[-_.]+$/, '');
  return name || 'model';
}

/**
 * Tags as typed: "key=value" separated by commas or new lines. Answers {tags} or {error} naming
 * the entry that is not of that shape.
 */
export function parseTags(text) {
  const tags = {};
  for (const raw of String(text || '').split(/[\n,]/)) {
    const entry = raw.trim();
    if (!entry) continue;
    const at = entry.indexOf('=');
    const key = at > 0 ? entry.slice(0, at).trim() : '';
    if (!key) return { error: `Tag "${entry}" is not of the form key=value.` };
    tags[key] = entry.slice(at + 1).trim();
  }
  return { tags };
}

/** Tags as "key=value" texts, in key order. */
export const tagTexts = (tags) => Object.keys(tags || {}).sort().map((k) => `${k}=${tags[k]}`);

/** A key as shown while hidden: dots and its last four characters. */
export const maskKey = (key) => (key ? `${'•'.repeat(8)}${String(key).slice(-4)}` : '');

/** The curl example as shown: each key in it masked unless `show`. */
export function curlShown(curl, keys, show) {
  let text = curl || '';
  if (show) return text;
  for (const key of Object.values(keys || {})) if (key) text = text.split(key).join(maskKey(key));
  return text;
}

const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);

/** A version's best-epoch metrics as [label, text] rows (missing ones left out). */
export function metricRows(metrics) {
  const m = metrics || {};
  const rows = [];
  if (m.best_epoch !== undefined && m.best_epoch !== null) rows.push(['Best epoch', String(m.best_epoch)]);
  if (isNumber(m.validation_loss)) rows.push(['Validation loss', m.validation_loss.toFixed(4)]);
  if (isNumber(m.validation_top1_accuracy)) rows.push(['Top-1 accuracy (validation)', `${(100 * m.validation_top1_accuracy).toFixed(2)}%`]);
  if (rows.length) return rows;
  // a component's model: the last value of each metric its script logged
  return Object.keys(m).sort().filter((k) => isNumber(m[k])).map((k) => [k, String(Number(m[k].toPrecision(6)))]);
}

/** "1.2 MB", "840 KB", "512 bytes". */
export function sizeText(n) {
  if (!isNumber(n) || n <= 0) return '';
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

/** Milliseconds as the endpoint page writes them; '—' before any request. */
export const msText = (ms) => (isNumber(ms) ? `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms` : '—');

/** An ISO time as the page writes it: "2026-11-24 04:05:06" (local time). */
export function timeText(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Deploy a version as a new endpoint; answers {ok, url} or {ok: false, error}. script: an entry
 * script {name, source} (init() and run(raw_data)) to serve it with, or null (the ONNX image classifier).
 * @param {string} model @param {number} version @param {string} [name]
 * @param {{name: string, source: string} | null} [script] */
export async function deploy(model, version, name = '', script = null) {
  const r = await api('POST', registryPaths.endpoints, { model, version, ...(name ? { name } : {}),
    ...(script ? { entry_script: script.source, entry_script_name: script.name } : {}) });
  if (r.ok) return { ok: true, url: r.data.url || registryPaths.endpointPage(r.data.name), endpoint: r.data };
  return { ok: false, error: errorOf(r, `Not deployed: the server answered ${r.status}.`) };
}
