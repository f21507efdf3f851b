/* A registered model's page (templates/pipelines/model.html): one card per version, newest first:
 * its status, lineage (run, pipeline, node, datasets), best-epoch metrics, classes, tags; Download,
 * Deploy (a new endpoint, then its page) and Delete. Drawn from the boot data (the versions as
 * GET /api/models/<name> gives them), read again every 3 s while a version is being prepared. */
import { api, errorOf } from './api.js';
import { $, button, h, muted } from './dom.js';
import { statusLabel } from './statusbook.js';
import { deploy, metricRows, parseTags, registryPaths, sizeText, tagTexts, timeText } from './registry.js';

const POLL_MS = 3000;
const ENDPOINT_NAME_RULE = "3 to 32 lower-case letters, digits or '-', starting with a letter";
const CLASSES_SHOWN = 30;
const boot = JSON.parse($('#model-boot').textContent);
let versions = boot.versions;

function say(text, bad = false) {
  const el = $('#action-result');
  el.className = bad ? 'error' : '';
  el.textContent = text;
}

const link = (href, text, attrs = {}) => (href ? h('a', { href, ...attrs }, text) : h('span', attrs, text));
/** The datasets of a lineage, each a link to its archive while it exists ("digits v2, pets v1": the
 * version the run read, where the lineage says). urls: {id: url}. */
const names = (list, urls = {}) => (list && list.length
  ? list.flatMap((d, i) => {
    const name = d.version ? `${d.name} v${d.version}` : d.name;
    return [i ? ', ' : null, urls[d.id] ? h('a', { href: urls[d.id], class: 'dataset-link' }, name) : `${name} (deleted)`];
  })
  : '—');

/** The module that fed its training: "ResNet (resnet18)", or a registered model and its version. */
function startedFrom(s) {
  const p = s.parameters || {};
  if (p.model && s.kind === 'registered_model') {
    return [h('a', { href: registryPaths.modelPage(p.model) }, p.model), p.version ? ` version ${p.version}` : ' (latest version)'];
  }
  return `${s.label || s.kind}${p.model_name ? ` (${p.model_name})` : ''}`;
}

/** The lineage of a version as [label, content] rows. */
function lineageRows(v) {
  const l = v.lineage || {};
  const rows = [];
  if (l.run) rows.push(['Run', link(v.run_url, `#${l.run.id}${l.run.name ? ` ${l.run.name}` : ''}${v.run_deleted ? ' (deleted)' : ''}`, { class: 'run-link' })]);
  else rows.push(['Run', h('span', { class: 'muted' }, 'deleted')]);
  if (l.pipeline) rows.push(['Pipeline', link(v.pipeline_url, l.pipeline.name, { class: 'pipeline-link' })]);
  if (l.node) rows.push(['Module', `${l.node.label || l.node.kind} (${l.node.id})`]);
  const ds = l.datasets || {};
  rows.push(['Trained on', h('span', { class: 'datasets-training' }, names(ds.training, v.dataset_urls))]);
  rows.push(['Validated on', h('span', { class: 'datasets-validation' }, names(ds.validation, v.dataset_urls))]);
  if (l.started_from) rows.push(['Started from', startedFrom(l.started_from)]);
  if (l.model_name) rows.push(['Architecture', l.model_name]);
  return rows;
}

const facts = (rows, cls) => h('dl', { class: `facts ${cls}` }, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));

function classesEl(classes) {
  if (!classes || !classes.length) return muted('No class list.');
  const shown = classes.slice(0, CLASSES_SHOWN).map((c) => h('li', {}, String(c)));
  const more = classes.length > CLASSES_SHOWN ? h('li', { class: 'muted' }, `and ${classes.length - CLASSES_SHOWN} more`) : null;
  return h('ul', { class: 'chips classes' }, shown, more);
}

function parametersEl(params) {
  const entries = Object.entries(params || {});
  if (!entries.length) return null;
  return h('details', { class: 'parameters' }, h('summary', {}, `Training parameters (${entries.length})`),
    facts(entries.map(([k, x]) => [k, typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x)]), 'params'));
}

function actions(v) {
  const ready = v.status === 'ready';
  const failed = v.status === 'failed';
  // a version whose packaging failed still has the model as training wrote it: it can be taken away
  const dl = ready || failed
    ? h('a', { class: 'button download', href: v.download_url, download: '',
      title: failed ? 'The model folder as training wrote it (weights, classes, inference transform), without the serving files: packaging failed'
        : 'The model folder, its model.onnx and a predict.py that loads it with plain torch' }, 'Download')
    : h('span', { class: 'button download disabled', 'aria-disabled': 'true', title: 'The archive is made once the version is ready' }, 'Download');
  const go = button({ class: 'primary deploy', disabled: failed, onclick: (e) => onDeploy(v, e.target),
    title: ready ? 'Serve this version at a new real-time endpoint'
      : failed ? 'Packaging failed (see above): this version cannot be served' : 'Deploy now: the endpoint serves it once it is ready' }, 'Deploy');
  const del = button({ class: 'danger delete-version', onclick: () => onDelete(v) }, 'Delete version');
  return h('div', { class: 'row-actions' }, dl, go, del);
}

/** A version's description and tags, and a button to edit them. */
function aboutEl(v) {
  const tags = tagTexts(v.tags);
  const el = h('div', { class: 'about' },
    v.description ? h('p', { class: 'description' }, v.description) : null,
    tags.length ? h('ul', { class: 'chips tags' }, tags.map((t) => h('li', {}, t))) : null,
    button({ class: 'link edit-about', onclick: () => { const f = editor(v); el.replaceWith(f); f.querySelector('textarea').focus(); } },
      v.description || tags.length ? 'Edit description and tags' : 'Add a description or tags'));
  return el;
}

/** The form that edits them: PATCH the version, its refusal shown under the fields. */
function editor(v) {
  const text = h('textarea', { class: 'edit-description', rows: 2 }, v.description || '');
  const tags = h('input', { type: 'text', class: 'edit-tags', value: tagTexts(v.tags).join(', '), placeholder: 'key=value, key=value' });
  const problem = h('p', { class: 'field-error', role: 'alert' });
  const form = h('form', { class: 'about-form' }, h('label', {}, 'Description', text),
    h('label', {}, 'Tags (key=value, separated by commas)', tags), problem,
    h('div', { class: 'row-actions' }, button({ class: 'primary save-about', type: 'submit' }, 'Save'),
      button({ class: 'cancel-about', onclick: () => form.replaceWith(aboutEl(v)) }, 'Cancel')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const parsed = parseTags(tags.value);
    if (parsed.error) { problem.textContent = parsed.error; return; }
    const r = await api('PATCH', registryPaths.version(boot.name, v.version), { description: text.value, tags: parsed.tags });
    if (!r.ok) { problem.textContent = errorOf(r, `Not saved: the server answered ${r.status}.`); return; }
    versions = versions.map((x) => (x.version === v.version ? r.data : x));
    show();
  });
  return form;
}

function versionCard(v) {
  const l = v.lineage || {};
  const status = h('span', { class: 'badge', 'data-status': v.status }, statusLabel(v.status));
  const head = h('div', { class: 'version-head' },
    h('h2', {}, `Version ${v.version} `, status), actions(v));
  const own = v.format && v.format !== 'designer' ? `${v.format} model folder: deploy it with an entry script` : '';
  const sub = muted([`Registered ${timeText(v.created_at)}`, sizeText(v.size), v.has_onnx ? 'with model.onnx' : '', own].filter(Boolean).join(' · '));
  const err = v.status === 'failed' && v.error
    ? h('div', { class: 'node-error', role: 'alert' }, h('strong', {}, 'Not servable'), h('pre', {}, v.error)) : null;
  const preparing = v.status === 'preparing' ? muted('Preparing the archive and the ONNX graph for serving…') : null;
  const served = (v.endpoints || []).length
    ? h('p', { class: 'served' }, 'Served by ', v.endpoints.flatMap((n, i) => [i ? ', ' : '', h('a', { href: registryPaths.endpointPage(n) }, n)])) : null;
  const metrics = metricRows(l.metrics);
  return h('section', { class: 'card version', 'data-version': v.version, 'data-status': v.status }, head, sub, err, preparing,
    aboutEl(v), served,
    h('div', { class: 'version-grid' },
      h('div', {}, h('h3', {}, 'Lineage'), facts(lineageRows(v), 'lineage')),
      h('div', {}, h('h3', {}, 'Metrics (best epoch)'), metrics.length ? facts(metrics, 'metrics') : muted('No metrics recorded.')),
      h('div', {}, h('h3', {}, `Classes (${(l.classes || []).length})`), classesEl(l.classes))),
    parametersEl(l.parameters));
}

function show() {
  $('#versions').replaceChildren(...versions.map(versionCard));
  $('#no-versions').hidden = versions.length > 0;
  const served = new Set(versions.flatMap((v) => v.endpoints || []));
  $('#model-facts').textContent = `${versions.length} version${versions.length === 1 ? '' : 's'}`
    + `${served.size ? ` · ${served.size} endpoint${served.size === 1 ? '' : 's'}` : ''}`;
  document.documentElement.dataset.modelLoaded = String(Number(document.documentElement.dataset.modelLoaded || 0) + 1);
}

/** Deploy asks for the endpoint's name (it is in the scoring URL, and stays): empty, the server
 * names it after the model (the first free of digits, digits-2...). */
function onDeploy(v, btn) {
  const row = btn.closest('.row-actions');
  const open = row.nextElementSibling && row.nextElementSibling.classList.contains('deploy-form') ? row.nextElementSibling : null;
  if (open) { $('input', open).focus(); return; }
  const input = h('input', { type: 'text', class: 'endpoint-name', 'aria-label': 'Endpoint name', maxlength: '32', autocomplete: 'off',
    pattern: '[a-z][a-z0-9\\-]{1,30}[a-z0-9]', title: ENDPOINT_NAME_RULE, placeholder: "empty: after the model's name" });
  const script = h('input', { type: 'file', class: 'entry-script', accept: '.py', 'aria-label': 'Entry script' });
  const form = h('form', { class: 'deploy-form' }, h('label', {}, 'Endpoint name ', input),
    h('label', {}, ' Entry script (optional) ', script),
    button({ type: 'submit', class: 'primary' }, `Deploy version ${v.version}`), button({ onclick: () => form.remove() }, 'Cancel'),
    h('p', { class: 'muted' }, `${ENDPOINT_NAME_RULE}; it is in the scoring URL and cannot be changed later. `
      + 'An entry script (init() once, run(raw_data) per request, as the original\'s score.py) serves any model; '
      + 'without one, the version\'s ONNX image classifier answers.'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const go = $('button[type=submit]', form);
    go.disabled = true;
    say(`Deploying version ${v.version}…`);
    const file = script.files && script.files[0];
    const r = await deploy(boot.name, v.version, input.value.trim(), file ? { name: file.name, source: await file.text() } : null);
    if (r.ok) { location.href = r.url; return; }
    go.disabled = false;
    say(r.error, true);
  });
  row.after(form);
  input.focus();
}

async function onDelete(v) {
  // eslint-disable-next-line no-alert
  if (!window.confirm(`Delete version ${v.version} of ${boot.name}? Its archive is deleted too.`)) return;
  const r = await api('DELETE', registryPaths.version(boot.name, v.version));
  if (!r.ok) { say(errorOf(r, `Version ${v.version} was not deleted: the server answered ${r.status}.`), true); return; }
  say(`Version ${v.version} deleted.`);
  versions = versions.filter((x) => x.version !== v.version);
  show();
}

async function refresh() {
  if ($('.about-form') || $('.deploy-form')) return; // not under the feet of someone editing
  const r = await api('GET', registryPaths.model(boot.name));
  // drawn again only when something changed: a focused button keeps its focus
  if (r.ok && JSON.stringify(r.data.versions) !== JSON.stringify(versions)) { versions = r.data.versions; show(); }
}

setInterval(() => { if (versions.some((v) => v.status === 'preparing')) refresh(); }, POLL_MS);
show();
