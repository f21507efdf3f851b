/* The Submit dialog of a pipeline that declares parameters: one typed field per parameter, its
 * default filled, its range and help shown; the server's problems (400) are shown under the field
 * they name (the rest above the fields), and the dialog stays open until a run is made. */
import { button, h, muted } from './dom.js';
import { parseValue, rangeText, valueProblemsOf } from './params.js';

function input(p, id) {
  const v = p.default;
  if (p.type === 'bool') return h('input', { type: 'checkbox', id, checked: v === true });
  if (p.type === 'string') return h('input', { type: 'text', id, value: v === null || v === undefined ? '' : v });
  return h('input', { type: 'number', id, step: p.type === 'int' ? 1 : 'any', value: v === null || v === undefined ? '' : v,
    min: typeof p.min === 'number' ? p.min : null, max: typeof p.max === 'number' ? p.max : null });
}

function fieldOf(p, i) {
  const id = `run-param-${i}`;
  const el = input(p, id);
  el.dataset.name = p.name;
  el.setAttribute('aria-describedby', `${id}-help ${id}-error`);
  const range = rangeText(p);
  const help = [p.type, range, p.help].filter(Boolean).join(' · ');
  const label = p.type === 'bool'
    ? h('label', { class: 'check' }, el, ` ${p.name}`)
    : [h('label', { for: id }, p.name), el];
  return h('div', { class: 'field', 'data-field': p.name }, label,
    h('p', { class: 'help', id: `${id}-help` }, help),
    h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' }));
}

/**
 * Ask for the values of `params` and send them: post(values) answers {ok, status, data} (api()).
 * Resolves with the answer of the run made, or null when the dialog is closed without one.
 */
export function askRunValues(params, post, title = 'Submit a run') {
  return new Promise((resolve) => {
    const top = h('ul', { class: 'dialog-problems', role: 'alert' });
    const fields = params.map(fieldOf);
    const go = button({ class: 'primary', id: 'run-dialog-submit' }, 'Submit run');
    const cancel = button({ id: 'run-dialog-cancel' }, 'Cancel');
    const form = h('form', { method: 'dialog', class: 'dialog-body', novalidate: true },
      muted('Each pipeline parameter takes this value in this run (the defaults are filled in).'), top, fields,
      h('div', { class: 'dialog-actions' }, cancel, go));
    const dialog = h('dialog', { id: 'run-dialog', class: 'dialog', 'aria-labelledby': 'run-dialog-title' },
      h('h2', { id: 'run-dialog-title' }, title), form);
    let answer = null;

    const values = () => Object.fromEntries(params.map((p, i) => {
      const el = form.querySelector(`#run-param-${i}`);
      return [p.name, parseValue(p.type, el.value, el.type === 'checkbox' ? el.checked : undefined)];
    }));

    function showProblems(problems, error) {
      const placed = new Set();
      params.forEach((p, i) => {
        const mine = valueProblemsOf(problems, p.name);
        for (const x of mine) placed.add(x);
        form.querySelector(`#run-param-${i}-error`).textContent = mine.map((x) => x.text || x.message).join(' ');
        fields[i].classList.toggle('invalid', mine.length > 0);
        form.querySelector(`#run-param-${i}`).toggleAttribute('aria-invalid', mine.length > 0);
      });
      const rest = problems.filter((x) => !placed.has(x)).map((x) => h('li', {}, x.text || x.message));
      if (!problems.length && error) rest.push(h('li', {}, error));
      top.replaceChildren(...rest);
    }

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (go.getAttribute('aria-disabled') === 'true') return;
      go.setAttribute('aria-disabled', 'true');
      try {
        const r = await post(values());
        if (r.ok) { answer = r; dialog.close(); return; }
        showProblems((r.data && r.data.problems) || [], `Not submitted: ${(r.data && r.data.error) || `the server answered ${r.status}`}`);
      } finally {
        go.removeAttribute('aria-disabled');
      }
    });
    go.type = 'submit';
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => { dialog.remove(); resolve(answer); });
    document.body.append(dialog);
    dialog.showModal();
    const first = form.querySelector('input');
    if (first) first.focus();
  });
}
