/* The components page (templates/pipelines/components.html): the user's components by kind, each
 * version with its command, ports and parameters (newest first), drawn from the boot data (what
 * GET /api/components gives) and read again after an upload or a deletion; the upload form sends
 * an archive, a component.yaml, or a folder's files with each file's path in its folder (Django
 * keeps only a file's own name) to POST /api/components. Its answer stays in view below the form. */
import { api, errorOf, upload } from './api.js';
import { $, button, h, muted } from './dom.js';
import { sizeText, timeText } from './registry.js';

const PATH = '/api/components';
const LEFT_OUT = /(^|\/)(__pycache__|\.git)(\/|$)/; // a folder's caches and history: not the component
const boot = JSON.parse($('#components-boot').textContent);
let kinds = boot.components;

function say(text, bad = false) {
  const el = $('#upload-result');
  if (!el) return;
  el.className = bad ? 'error' : 'done';
  el.textContent = text;
  el.scrollIntoView({ block: 'nearest' });
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

function portsEl(ports, cls) {
  if (!ports.length) return muted('none');
  return h('ul', { class: `chips ports ${cls}` }, ports.map((p) => h('li', { 'data-port': p.name, title: p.name },
    `${p.label || p.name} `, h('span', { class: 'port-type' }, p.type), p.optional ? h('span', { class: 'muted' }, ' optional') : null)));
}

function rangeText(p) {
  if (p.choices) return p.choices.join(' | ');
  const lo = p.min !== undefined ? `≥ ${p.min}` : '';
  const hi = p.max !== undefined ? `≤ ${p.max}` : '';
  return [lo, hi].filter(Boolean).join(', ');
}

function paramsEl(params) {
  if (!params.length) return muted('none');
  const rows = params.map((p) => h('tr', { 'data-param': p.name },
    h('td', {}, h('code', {}, p.name), p.label && p.label !== p.name ? h('span', { class: 'muted' }, ` ${p.label}`) : null),
    h('td', {}, p.type === 'str' ? 'string' : p.type), h('td', {}, p.default === undefined ? '' : JSON.stringify(p.default)), h('td', {}, rangeText(p)),
    h('td', { class: 'help-cell' }, p.help || '')));
  return h('div', { class: 'table-wide' }, h('table', { class: 'params' },
    h('thead', {}, h('tr', {}, ['Parameter', 'Type', 'Default', 'Range or choices', 'Help'].map((t) => h('th', {}, t)))),
    h('tbody', {}, rows)));
}

/** A version: the latest open, older ones folded (their summary says what they are). */
function versionEl(k, v, latest) {
  const facts = [`Added ${timeText(v.created_at)}`, v.category !== k.category ? v.category : '', v.distributed ? 'distributed' : '',
    `digest ${v.digest.slice(0, 12)}`];
  const body = [
    v.description ? h('p', { class: 'description' }, v.description) : null,
    h('pre', { class: 'command', title: 'Command' }, v.command),
    h('div', { class: 'version-grid' },
      h('div', {}, h('h4', {}, 'Inputs'), portsEl(v.inputs, 'inputs')),
      h('div', {}, h('h4', {}, 'Outputs'), portsEl(v.outputs, 'outputs'))),
    h('h4', {}, 'Parameters'), paramsEl(v.params),
    h('div', { class: 'row-actions' }, button({ class: 'danger delete-version', onclick: () => onDelete(k.kind, v.version) }, 'Delete version')),
  ];
  const title = [h('h3', {}, `Version ${v.version}`), h('span', { class: 'muted' }, facts.filter(Boolean).join(' · '))];
  return h('details', { class: 'component-version', 'data-version': v.version, open: latest },
    h('summary', {}, title), body);
}

function kindEl(k) {
  return h('section', { class: 'card component', 'data-kind': k.kind },
    h('div', { class: 'sweep-title' }, h('h2', {}, k.label, ' ', h('code', { class: 'kind' }, k.kind)),
      h('span', { class: 'muted' }, `${k.category} · ${plural(k.versions.length, 'version')} · latest ${k.latest_version}`)),
    k.versions.map((v, i) => versionEl(k, v, i === 0)));
}

function show() {
  $('#components').replaceChildren(...kinds.map(kindEl));
  $('#no-components').hidden = kinds.length > 0;
  document.documentElement.dataset.componentsLoaded = String(Number(document.documentElement.dataset.componentsLoaded || 0) + 1);
}

async function reload() {
  const r = await api('GET', PATH);
  if (r.ok) kinds = r.data.components;
  show();
}

async function onDelete(kind, version) {
  if (!window.confirm(`Delete version ${version} of ${kind}? Pipelines that use it will show a problem.`)) return;
  const r = await api('DELETE', `${PATH}/${encodeURIComponent(kind)}/versions/${version}`);
  if (!r.ok && r.status !== 404) { say(errorOf(r, `Not deleted: the server answered ${r.status}.`), true); return; }
  say(`Deleted version ${version} of ${kind}.`);
  reload();
}

/** The form to send, or the reason there is none. */
function formOf(fileInput, folderInput) {
  const form = new FormData();
  const file = fileInput.files[0];
  const folder = Array.from(folderInput.files).filter((f) => !LEFT_OUT.test(f.webkitRelativePath || f.name));
  if (file && folder.length) return { error: 'Choose an archive or a folder, not both.' };
  const sent = file ? [file] : folder;
  if (!sent.length) return { error: folderInput.files.length ? 'The folder holds no file to send.' : 'Choose an archive, a component.yaml or a folder first.' };
  if (!file && folder.length > boot.max_files) {
    return { error: `The folder has ${folder.length} files, more than the ${boot.max_files} one upload may send: upload an archive of it.` };
  }
  const size = sent.reduce((n, f) => n + f.size, 0);
  if (size > boot.max_upload_bytes) return { error: `The upload is ${sizeText(size)}, more than the limit of ${sizeText(boot.max_upload_bytes)}.` };
  if (file) form.append('file', file);
  else folder.forEach((f) => { form.append('files', f); form.append('paths', f.webkitRelativePath || f.name); });
  return { form };
}

function wireUpload() {
  const form = $('#component-upload');
  if (!form) return;
  const fileInput = $('#upload-file');
  const folderInput = $('#upload-folder');
  // one source at a time: choosing one clears the other
  fileInput.addEventListener('change', () => { if (fileInput.files.length) folderInput.value = ''; });
  folderInput.addEventListener('change', () => { if (folderInput.files.length) fileInput.value = ''; });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const built = formOf(fileInput, folderInput);
    if (built.error) { say(built.error, true); return; }
    const btn = $('#upload-button');
    btn.disabled = true;
    say('');
    const r = await upload(PATH, built.form, (pct) => { $('#upload-progress').textContent = `${pct}%`; });
    btn.disabled = false;
    $('#upload-progress').textContent = '';
    if (!r.ok) { say(`Not added: ${errorOf(r, `the server answered ${r.status}`)}`, true); return; }
    say(`Added ${r.data.label} (${r.data.kind}) version ${r.data.version}.`);
    fileInput.value = '';
    folderInput.value = '';
    await reload();
  });
}

wireUpload();
show();
