/* The pipeline's parameters: the store (the draft's top-level "parameters", saved by autosave
 * like any edit) and the "Pipeline parameters" section of the Module tab, shown while no module
 * is selected alone: add, edit, remove; a renamed parameter keeps its bindings, a removed one
 * unbinds its nodes (they keep their own values). Quick checks show while typing; the server's
 * problems about a parameter show under it after each save. */
import { $$, button, h, muted } from './dom.js';
import { TYPES, followRename, newParam, paramProblems, parseValue, problemsOfParam, usesOf, withType } from './params.js';

/** extra: the draft's fields besides its graph (canvas.js sends them on save); onChange() after each edit. */
export function paramsStore(extra, onChange) {
  const listeners = [];
  const store = {
    list: () => extra.parameters || [],
    set(list) { extra.parameters = list; onChange(); for (const f of listeners) f(); },
    add(p) { store.set([...store.list(), p]); },
    replace(i, p) { store.set(store.list().map((q, k) => (k === i ? p : q))); },
    remove(i) { store.set(store.list().filter((q, k) => k !== i)); },
    onChange: (f) => listeners.push(f),
  };
  return store;
}

const nodesOf = (graph) => graph.getNodes().map((n) => ({ id: n.id, data: n.getData() }));

/** The panel. graph: the X6 graph (bindings follow a rename); problems(): the server's last list. */
export function paramsPanel(graph, store, problems) {
  let panel = null; // the Module tab while it shows this section
  let section = null;

  function follow(from, to) {
    const changes = followRename(nodesOf(graph), from, to);
    if (!changes.length) return;
    // outside the undo history, as the declarations are: an undo must not point a binding back at a
    // name that is gone (the edit is saved with the declaration's)
    for (const c of changes) graph.getCellById(c.id).setData(c.data, { overwrite: true, ignoreHistory: true });
  }

  function edit(i, key, input) {
    const p = store.list()[i];
    let next;
    if (key === 'type') next = withType(p, input.value);
    else if (key === 'name') next = { ...p, name: input.value.trim() };
    else if (key === 'help') next = { ...p, help: input.value };
    else if (key === 'default') next = { ...p, default: parseValue(p.type, input.value, input.type === 'checkbox' ? input.checked : undefined) };
    else { // min, max: an empty field takes the bound away
      next = { ...p };
      const v = parseValue('float', input.value);
      if (v === null) delete next[key]; else next[key] = v;
    }
    store.replace(i, next);
    if (key === 'name' && p.name !== next.name) follow(p.name, next.name);
    if (key === 'type') redraw(); else mark();
  }

  function remove(i) {
    const p = store.list()[i];
    store.remove(i);
    follow(p.name, null);
    render();
  }

  function field(i, key, label, input) {
    const id = `pp-${i}-${key}`;
    input.id = id;
    input.dataset.key = key;
    input.setAttribute('aria-describedby', `${id}-error`);
    return h('div', { class: `pp-field pp-${key}` }, h('label', { for: id }, label), input,
      h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' }));
  }

  function valueInput(p, key) {
    const v = p[key];
    if (p.type === 'bool' && key === 'default') return h('input', { type: 'checkbox', checked: v === true });
    if (p.type === 'string') return h('input', { type: 'text', value: v === null || v === undefined ? '' : v });
    return h('input', { type: 'number', step: p.type === 'int' && key === 'default' ? 1 : 'any', value: v === null || v === undefined ? '' : v });
  }

  function card(p, i) {
    const ranged = p.type === 'int' || p.type === 'float';
    const uses = usesOf(nodesOf(graph), p.name);
    const typeSelect = h('select', {}, TYPES.map((t) => h('option', { value: t, selected: t === p.type }, t)));
    return h('div', { class: 'pp-card', 'data-param-index': i, 'data-name': p.name },
      h('div', { class: 'pp-row' }, field(i, 'name', 'Name', h('input', { type: 'text', value: p.name, autocomplete: 'off', spellcheck: 'false' })),
        field(i, 'type', 'Type', typeSelect)),
      h('div', { class: 'pp-row' }, field(i, 'default', 'Default', valueInput(p, 'default')),
        ranged ? field(i, 'min', 'Min', valueInput(p, 'min')) : null,
        ranged ? field(i, 'max', 'Max', valueInput(p, 'max')) : null),
      field(i, 'help', 'Help', h('input', { type: 'text', value: p.help || '', placeholder: 'what it changes' })),
      h('div', { class: 'pp-foot' },
        h('span', { class: 'muted pp-uses' }, uses ? `bound by ${uses} module parameter${uses > 1 ? 's' : ''}` : 'not bound yet'),
        button({ class: 'link danger', 'data-remove': i, 'aria-label': `Remove parameter ${p.name}`,
          title: uses ? 'Its modules are unbound and keep their own values' : null, onclick: () => remove(i) }, 'Remove')),
      h('ul', { class: 'pp-problems', 'aria-live': 'polite' }));
  }

  /** Each card's quick checks and the server's problems about it. */
  function mark() {
    if (!section) return;
    const list = store.list();
    for (const el of $$('.pp-card', section)) {
      const i = Number(el.dataset.paramIndex);
      const p = list[i];
      if (!p) continue;
      el.dataset.name = p.name;
      const quick = paramProblems(p, list);
      for (const err of $$('.field-error', el)) {
        const key = err.id.replace(`pp-${i}-`, '').replace('-error', '');
        err.textContent = quick[key] || '';
        err.closest('.pp-field').classList.toggle('invalid', !!quick[key]);
      }
      const server = problemsOfParam(problems(), p.name, i).map((x) => h('li', {}, x.text || x.message));
      el.querySelector('.pp-problems').replaceChildren(...server);
      el.classList.toggle('invalid', server.length > 0 || Object.keys(quick).length > 0);
    }
  }

  function render() {
    if (!panel) return;
    const list = store.list();
    const add = button({ id: 'add-parameter', onclick: () => { store.add(newParam(list.map((p) => p.name))); render(); focusLast(); } }, '+ Add parameter');
    const next = h('section', { class: 'pipeline-params', 'aria-labelledby': 'pp-title' },
      h('div', { class: 'pp-head' }, h('h2', { id: 'pp-title' }, 'Pipeline parameters'), add),
      muted('Values asked for at each Submit, and swept by a Sweep. Bind a module\u2019s parameter to one with Bind in its pane.'),
      list.length ? list.map(card) : muted('No parameters yet.'));
    next.addEventListener('change', (e) => {
      const el = e.target.closest('[data-key]');
      const c = e.target.closest('.pp-card');
      if (el && c) edit(Number(c.dataset.paramIndex), el.dataset.key, el);
    });
    if (section && section.isConnected) section.replaceWith(next); else panel.append(next);
    section = next;
    mark();
  }

  function focusLast() {
    const cards = section ? $$('.pp-card', section) : [];
    if (cards.length) cards[cards.length - 1].querySelector('input').focus();
  }

  /** Draw the section again (a parameter added, removed or of another type), the focus kept. */
  function redraw() {
    const focused = document.activeElement && document.activeElement.id;
    render();
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
  }

  /** Bring parameter `name`'s card into view, its first field focused. */
  function reveal(name) {
    const el = section && section.isConnected ? $$('.pp-card', section).find((c) => c.dataset.name === name) : null;
    if (!el) return;
    el.scrollIntoView({ block: 'nearest' });
    el.querySelector('input').focus();
  }

  return {
    reveal,
    /** Fill the Module tab (no module selected). */
    show(el) { panel = el; section = null; render(); },
    mark,
  };
}
