/* "Register model" in Outputs + logs of a completed Train PyTorch Model or Export to ONNX node, or of
 * a component's output declared as a model (one button per such output): a
 * small dialog (name, description, tags) -> POST /api/models; then "Registered NAME version N"
 * with "Open model" and "Deploy" (a new endpoint, then its page). The API's refusals are shown in
 * the dialog, which stays open. From a finished run to an endpoint: Register model, Register, Deploy. */
import { api, errorOf } from './api.js';
import { $, button, h, muted } from './dom.js';
import { loadFigures } from './modelfigures.js';
import { REGISTERED, REGISTRABLE_STATUSES, deploy, parseTags, registrableOutputs, registryPaths, safeName } from './registry.js';

/** The pipeline's name as the top bar shows it (it follows a rename). */
const pipelineName = () => ($('#pipeline-name') ? $('#pipeline-name').textContent.trim() : '');

const field = (id, label, input, help) => h('div', { class: 'field' }, h('label', { for: id }, label), input,
  help ? h('p', { class: 'help', id: `${id}-help` }, help) : null);

/** label: the node as the canvas names it ("Train PyTorch Model"); output: the port to register, or null (its one model). */
function openDialog(runId, nodeId, label, output) {
  const name = h('input', { type: 'text', id: 'register-name', value: safeName(pipelineName()), required: true,
    maxlength: 100, autocomplete: 'off', 'aria-describedby': 'register-name-help' });
  const description = h('textarea', { id: 'register-description', rows: 2 });
  const tags = h('textarea', { id: 'register-tags', rows: 2, placeholder: 'dataset=digits, stage=test', 'aria-describedby': 'register-tags-help' });
  const problem = h('p', { class: 'dialog-problems', id: 'register-error', role: 'alert' });
  // the figure to choose a model by, beside the best of the pipeline's recent runs (modelfigures.js)
  const figures = h('div', { class: 'register-figures', id: 'register-figures' });
  const pipelineId = (location.pathname.match(/^\/pipelines\/(\d+)\//) || [])[1];
  if (pipelineId) {
    loadFigures(pipelineId, runId, nodeId, (s) => REGISTRABLE_STATUSES.includes(s)).then((lines) => figures.replaceChildren(...lines));
  }
  const go = button({ class: 'primary', id: 'register-submit' }, 'Register');
  go.type = 'submit';
  const cancel = button({ id: 'register-cancel' }, 'Cancel');
  const form = h('form', { method: 'dialog', class: 'dialog-body', novalidate: true },
    muted(`The model of ${label} in run #${runId} is copied into the registry as the next version of this name.`), figures, problem,
    field('register-name', 'Name', name, 'Letters, digits, "_", "-" or "."; the same name again makes version 2, 3…'),
    field('register-description', 'Description (optional)', description),
    field('register-tags', 'Tags (optional)', tags, 'key=value, separated by commas or new lines'),
    h('div', { class: 'dialog-actions' }, cancel, go));
  const dialog = h('dialog', { id: 'register-dialog', class: 'dialog', 'aria-labelledby': 'register-title' },
    h('h2', { id: 'register-title' }, 'Register model'), form);

  function done(v) {
    const result = h('p', { class: 'dialog-problems' });
    const deployBtn = button({ class: 'primary', id: 'register-deploy' }, 'Deploy');
    deployBtn.addEventListener('click', async () => {
      deployBtn.disabled = true;
      result.textContent = '';
      const r = await deploy(v.name, v.version);
      if (r.ok) { location.href = r.url; return; }
      deployBtn.disabled = false;
      result.textContent = r.error;
    });
    // a model folder of its own is served by an entry script, which its page's Deploy takes
    const own = v.format && v.format !== 'designer' && !v.has_onnx;
    if (own) deployBtn.hidden = true;
    const body = h('div', { class: 'dialog-body', id: 'register-done' },
      h('p', { class: 'registered', role: 'status' }, `Registered ${v.name} version ${v.version}`),
      muted(own ? `A ${v.format} model folder: deploy it from its page (Open model, Deploy) with an entry script, init() and run(raw_data).`
        : 'Deploy serves it at a real-time endpoint (HTTP, with a key); it answers once the model is packaged.'), result,
      h('div', { class: 'dialog-actions' }, button({ id: 'register-close', onclick: () => dialog.close() }, 'Close'),
        h('a', { class: 'button', id: 'open-model', href: v.page_url || registryPaths.modelPage(v.name) }, 'Open model'), deployBtn));
    form.replaceWith(body);
    (own ? $('#open-model') : deployBtn).focus();
    document.dispatchEvent(new CustomEvent(REGISTERED, { detail: v }));
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (go.getAttribute('aria-disabled') === 'true') return;
    const parsed = parseTags(tags.value);
    if (parsed.error) { problem.textContent = parsed.error; tags.focus(); return; }
    if (!name.value.trim()) { problem.textContent = 'Give the model a name.'; name.focus(); return; }
    go.setAttribute('aria-disabled', 'true');
    problem.textContent = '';
    const r = await api('POST', registryPaths.models,
      { run: runId, node: nodeId, name: name.value.trim(), description: description.value, tags: parsed.tags,
        ...(output ? { output } : {}) });
    go.removeAttribute('aria-disabled');
    if (r.ok) done(r.data);
    else problem.textContent = `Not registered: ${errorOf(r, `the server answered ${r.status}`)}`;
  });
  cancel.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  name.select();
}

/** The "Register model" button(s) for a node of a run, or null when no output of it can be registered.
 * module: the node's module (GET /api/modules), for a component's outputs declared as a model;
 * stored: the names of the node run's outputs (an MLflow model its script logged is one it did not declare). */
export function registerButton(runId, node, status, module, stored = []) {
  const kind = node && node.getData ? node.getData().kind : null;
  const outputs = registrableOutputs(kind, module, stored);
  if (!outputs.length || !REGISTRABLE_STATUSES.includes(status)) return null;
  const label = node.attr('label/text') || node.id;
  return h('div', { class: 'register-row' }, ...outputs.map((port, i) =>
    button({ class: 'primary', id: i ? `register-model-${port.name}` : 'register-model',
      onclick: () => openDialog(runId, node.id, port && outputs.length > 1 ? `${label} (${port.label})` : label, port && port.name),
      title: 'Copy this trained model into the model registry, to download, reuse or deploy it' },
    port && outputs.length > 1 ? `Register model: ${port.label}` : 'Register model')));
}
