/* An endpoint's page (templates/pipelines/endpoint.html): its status and why, the scoring URL,
 * the two keys (masked; show, copy, regenerate), a curl example, the live figures (requests,
 * latency p50 / p95, errors, recent errors) read again every 3 s, the version it serves (a
 * switch is a PATCH), delete. Drawn from the boot data: the endpoint as GET /api/endpoints/<name> gives it. */
import { api, errorOf } from './api.js';
import { $, button, h, withCode } from './dom.js';
import { statusLabel } from './statusbook.js';
import { curlShown, maskKey, msText, registryPaths, timeText } from './registry.js';

const POLL_MS = 3000;
const KEYS = ['primary', 'secondary'];
let ep = JSON.parse($('#endpoint-boot').textContent);
const shown = { primary: false, secondary: false, curl: false };

function say(text, bad = false) {
  const el = $('#action-result');
  el.className = bad ? 'error' : '';
  el.textContent = text;
}

async function copy(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    say(`${what} copied to the clipboard.`);
  } catch (e) {
    say(`${what} could not be copied here: select it and copy it by hand.`, true);
  }
}

function keyRow(which) {
  const key = ep.keys[which];
  const code = h('code', { class: 'key', id: `key-${which}` }, shown[which] ? key : maskKey(key));
  const verb = shown[which] ? 'Hide' : 'Show';
  const toggle = button({ class: 'show-key', 'aria-pressed': String(shown[which]), 'aria-label': `${verb} the ${which} key`,
    onclick: () => { shown[which] = !shown[which]; drawKeys(); } }, verb);
  return h('div', { class: 'key-row', 'data-key': which },
    h('span', { class: 'key-name' }, which === 'primary' ? 'Primary key' : 'Secondary key'), code,
    h('span', { class: 'row-actions' }, toggle,
      button({ class: 'copy-key', 'aria-label': `Copy the ${which} key`, onclick: () => copy(key, `The ${which} key`) }, 'Copy'),
      button({ class: 'regenerate', 'aria-label': `Regenerate the ${which} key`, onclick: () => regenerate(which) }, 'Regenerate')));
}

let drawnKeys = '';
/** The keys and the curl example, drawn again only when they change (a focused button keeps its focus). */
function drawKeys() {
  const drawn = JSON.stringify([ep.keys, ep.curl, shown]);
  if (drawn === drawnKeys) return;
  drawnKeys = drawn;
  const focused = document.activeElement && document.activeElement.closest('.key-row[data-key] button');
  const refocus = focused ? `.key-row[data-key=${focused.closest('.key-row').dataset.key}] button.${focused.classList[0]}` : null;
  $('#keys').replaceChildren(...KEYS.map(keyRow));
  if (refocus && $(refocus)) $(refocus).focus();
  $('#curl').textContent = curlShown(ep.curl, ep.keys, shown.curl);
  $('#show-curl-key').textContent = shown.curl ? 'Hide key' : 'Show key';
  $('#show-curl-key').setAttribute('aria-pressed', String(shown.curl));
}

function drawVersions() {
  const select = $('#version-select');
  const wanted = (ep.versions || []).includes(ep.version) ? ep.versions : [ep.version, ...(ep.versions || [])];
  const same = select.options.length === wanted.length && Array.from(select.options).every((o, i) => Number(o.value) === wanted[i]);
  // rebuilt only when the choices change: a user mid-choice keeps the list open
  if (!same) select.replaceChildren(...wanted.map((v) => h('option', { value: v }, `version ${v}`)));
  if (document.activeElement !== select) select.value = String(ep.version);
  $('#switch-version').disabled = Number(select.value) === ep.version;
}

function drawStats() {
  const s = ep.stats || {};
  $('#stat-requests').textContent = (s.requests || 0).toLocaleString();
  $('#stat-errors').textContent = (s.errors || 0).toLocaleString();
  $('#stat-p50').textContent = msText(s.p50_ms);
  $('#stat-p95').textContent = msText(s.p95_ms);
  const errors = ep.recent_errors || [];
  $('#no-errors').hidden = errors.length > 0;
  $('#recent-errors').hidden = !errors.length;
  $('#recent-errors tbody').replaceChildren(...errors.map((e) => h('tr', {},
    h('td', { class: 'when' }, timeText(e.at)), h('td', { class: 'num' }, String(e.status)), h('td', { class: 'message' }, withCode(e.message)))));
}

function show(data) {
  ep = data;
  const badge = $('#endpoint-status');
  badge.textContent = statusLabel(ep.status);
  badge.dataset.status = ep.status;
  $('#status-message').replaceChildren(...withCode(ep.status_message));
  const model = $('#model-link');
  model.textContent = ep.model;
  model.href = registryPaths.modelPage(ep.model);
  $('#serving-version').textContent = String(ep.version);
  $('#entry-script').hidden = !ep.entry_script;
  $('#entry-script-name').textContent = ep.entry_script || '';
  // the serving processes still load the version asked for: its status says which one answers meanwhile
  $('#serves-word').textContent = (ep.status_message || '').startsWith('switching') ? 'Switching to' : 'Serves';
  $('#scoring-url').textContent = ep.scoring_url;
  drawKeys();
  drawVersions();
  drawStats();
  document.documentElement.dataset.endpointStatus = ep.status;
  document.documentElement.dataset.endpointLoaded = String(Number(document.documentElement.dataset.endpointLoaded || 0) + 1);
}

async function regenerate(which) {
  // eslint-disable-next-line no-alert
  if (!window.confirm(`Regenerate the ${which} key? Clients using the old one get 401 from now on.`)) return;
  const r = await api('POST', registryPaths.keys(ep.name), { key: which });
  if (!r.ok) { say(errorOf(r, `The ${which} key was not regenerated: the server answered ${r.status}.`), true); return; }
  shown[which] = true;
  show(r.data);
  say(`A new ${which} key is in use: the old one no longer works.`);
}

$('#version-select').addEventListener('change', () => { $('#switch-version').disabled = Number($('#version-select').value) === ep.version; });
$('#switch-version').addEventListener('click', async () => {
  const version = Number($('#version-select').value);
  $('#switch-version').disabled = true;
  const r = await api('PATCH', registryPaths.endpoint(ep.name), { version });
  if (!r.ok) { say(errorOf(r, `Not switched: the server answered ${r.status}.`), true); drawVersions(); return; }
  say(''); // the status line says how the switch goes, and which version answers meanwhile
  show(r.data);
});

$('#delete-endpoint').addEventListener('click', async () => {
  // eslint-disable-next-line no-alert
  if (!window.confirm(`Delete endpoint ${ep.name}? Its scoring URL stops answering.`)) return;
  const r = await api('DELETE', registryPaths.endpoint(ep.name));
  if (r.ok) { location.href = '/endpoints/'; return; }
  say(errorOf(r, `Not deleted: the server answered ${r.status}.`), true);
});

$('#copy-url').addEventListener('click', () => copy(ep.scoring_url, 'The scoring URL'));
$('#copy-curl').addEventListener('click', () => copy(ep.curl, 'The curl command'));
$('#show-curl-key').addEventListener('click', () => { shown.curl = !shown.curl; drawKeys(); });

let busy = false;
async function refresh() {
  if (busy || document.hidden) return;
  busy = true;
  const r = await api('GET', registryPaths.endpoint(ep.name));
  busy = false;
  if (r.ok) show(r.data);
  else if (r.status === 404) $('#status-message').textContent = 'This endpoint no longer exists.';
}

setInterval(refresh, POLL_MS);
show(ep);
