/* The Sweep dialog (toolbar "Sweep", beside Submit): a HyperDrive sweep of the pipeline's
 * parameters, written in a form or as YAML (two tabs over one config: switching carries the
 * config across; the tab shown is what is sent). POST /api/sweeps; 201 opens the sweep's page;
 * 400 puts each problem next to the field it names, the rest in a list on top. */
import { $, $$, button, h, muted } from './dom.js';
import { api } from './api.js';
import { configToForm, configYaml, defaultForm, fixedOf, fixedValues, formToConfig, parseYaml, problemField } from './sweepconfig.js';
import { sweepFormEl } from './sweepform.js';

const NO_PARAMS = 'Declare a pipeline parameter first (click the empty canvas, then "+ Add parameter" in the Module tab), '
  + 'or add a component whose command passes script arguments (--learning_rate {params.learning_rate})';

/**
 * pipelineId; params(): the pipeline's parameters and the script arguments of its components (sweepargs.js); metrics(): the metric names its modules emit;
 * settle(): the last edits saved (a sweep runs the stored pipeline); false when they cannot be.
 */
export function sweepDialog({ pipelineId, params, metrics, settle }) {
  const btn = $('#sweep');
  let last = null; // {config, fixed} of the last sweep tried: the next opening starts from it

  function updateButton() {
    const none = !params().length;
    btn.setAttribute('aria-disabled', String(none));
    btn.title = none ? NO_PARAMS : 'Sweep the pipeline parameters (HyperDrive-style): sampling, space, early termination';
  }

  // the yaml library is some 60 small modules: loaded when the dialog first opens, not with the page
  let yamlLib = null;
  const loadYaml = async () => { if (!yamlLib) yamlLib = (await import('../vendor/yaml/browser/index.js')).default; return yamlLib; };

  async function open() {
    const YAML = await loadYaml();
    const declared = params();
    let form = last ? configToForm(last.config, declared, last.fixed) : defaultForm(declared, metrics());
    let mode = 'form';
    const top = h('ul', { class: 'dialog-problems', role: 'alert' });
    const formPanel = h('div', { id: 'sweep-form-panel', role: 'tabpanel' });
    const yamlText = h('textarea', { id: 'sweep-yaml', rows: 18, spellcheck: 'false', 'aria-describedby': 'sweep-yaml-error', 'aria-label': 'Sweep configuration as YAML' });
    const yamlError = h('p', { class: 'field-error', id: 'sweep-yaml-error', role: 'alert' });
    const yamlPanel = h('div', { id: 'sweep-yaml-panel', role: 'tabpanel', hidden: true },
      muted('The same configuration in HyperDrive\u2019s YAML shape: paste or edit it here; it is what is sent while this tab is shown.'), yamlText, yamlError);
    const tab = (name, label) => button({ role: 'tab', id: `sweep-tab-${name}`, 'data-tab': name, 'aria-selected': String(name === 'form'), onclick: () => switchTo(name) }, label);
    const go = button({ class: 'primary', id: 'sweep-submit', type: 'submit' }, 'Start sweep');
    go.type = 'submit';
    const body = h('form', { method: 'dialog', class: 'dialog-body', novalidate: true }, top, formPanel, yamlPanel,
      h('div', { class: 'dialog-actions' }, button({ id: 'sweep-cancel', onclick: () => dialog.close() }, 'Cancel'), go));
    const dialog = h('dialog', { id: 'sweep-dialog', class: 'dialog wide', 'aria-labelledby': 'sweep-title' },
      h('div', { class: 'dialog-head' }, h('h2', { id: 'sweep-title' }, 'Sweep'),
        h('div', { class: 'tabs', role: 'tablist' }, tab('form', 'Form'), tab('yaml', 'YAML'))), body);

    function drawForm() {
      const focused = document.activeElement && document.activeElement.id;
      formPanel.replaceChildren(sweepFormEl(form, metrics(), declared, drawForm));
      if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    }

    function switchTo(name) {
      if (name === mode) return;
      if (name === 'yaml') {
        yamlText.value = configYaml(formToConfig(form), YAML);
        yamlError.textContent = '';
      } else {
        const parsed = parseYaml(yamlText.value, YAML);
        if (parsed.error) { yamlError.textContent = `Not read: ${parsed.error}. Fix it to go back to the form.`; return; }
        form = configToForm(parsed.config, declared, fixedOf(form));
        drawForm();
      }
      mode = name;
      for (const b of $$('[role=tab]', dialog)) b.setAttribute('aria-selected', String(b.dataset.tab === name));
      formPanel.hidden = name !== 'form';
      yamlPanel.hidden = name !== 'yaml';
    }

    function showProblems(problems, config, error) {
      for (const el of $$('[data-error-for]', formPanel)) el.replaceChildren();
      for (const el of $$('.sw-field.invalid', formPanel)) el.classList.remove('invalid');
      const rest = [];
      for (const p of problems) {
        const text = p.text || p.message;
        const key = mode === 'form' ? problemField(p, config) : '';
        const line = key && formPanel.querySelector(`[data-error-for="${CSS.escape(key)}"]`);
        if (line) {
          line.append(h('span', { class: 'problem-line' }, text));
          line.closest('.sw-field').classList.add('invalid');
        } else {
          rest.push(h('li', {}, text));
        }
      }
      if (!problems.length && error) rest.push(h('li', {}, error));
      top.replaceChildren(...rest);
      const first = dialog.querySelector('.sw-field.invalid, .dialog-problems li');
      if (first) first.scrollIntoView({ block: 'nearest' });
    }

    body.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (go.getAttribute('aria-disabled') === 'true') return;
      go.setAttribute('aria-disabled', 'true');
      try {
        const config = mode === 'form' ? formToConfig(form) : parseYaml(yamlText.value, YAML).config;
        if (config) last = { config, fixed: fixedOf(form) };
        // the parameters not swept: the values typed in the form (in YAML mode, of those its config leaves out)
        const parameters = fixedValues(mode === 'form' || !config ? form : configToForm(config, declared, fixedOf(form)));
        if (!await settle()) { showProblems([], null, 'Not started: the pipeline\u2019s last edits could not be saved.'); return; }
        const request = mode === 'form' ? { pipeline: pipelineId, config, parameters } : { pipeline: pipelineId, config_yaml: yamlText.value, parameters };
        const r = await api('POST', '/api/sweeps', request);
        if (r.ok && r.data && r.data.id) { window.location.assign(`/sweeps/${r.data.id}/`); return; }
        showProblems((r.data && r.data.problems) || [], config, `Not started: ${(r.data && r.data.error) || `the server answered ${r.status}`}`);
      } finally {
        go.removeAttribute('aria-disabled');
      }
    });
    dialog.addEventListener('close', () => dialog.remove());
    drawForm();
    document.body.append(dialog);
    dialog.showModal();
    $('#sw-sampling', dialog).focus();
  }

  btn.addEventListener('click', () => { if (btn.getAttribute('aria-disabled') !== 'true') open(); });
  updateButton();
  return { updateButton, open };
}
