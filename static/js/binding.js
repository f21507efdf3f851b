/* Binding in the node pane: a module parameter's "Bind" button offers the pipeline parameters
 * of a compatible type and a new one made from it (name, type, value and range prefilled); a
 * bound parameter shows "⟶ name" with Unbind (rendered by the server from the node's "bindings").
 * The binding is node data: it is undoable and saved by autosave like any edit of the pane. */
import { $, button, h, muted } from './dom.js';
import { bindable, compatibleTypes, paramFromModule, rangeText, withBinding } from './params.js';
import { moduleOf } from './rules.js';

const describe = (p) => `${p.type}, default ${JSON.stringify(p.default)}${rangeText(p) ? `, ${rangeText(p)}` : ''}`;

/** pane: the node pane (show, node); store: the pipeline parameters; modules: kind -> module. */
export function bindingMenu(pane, store, modules) {
  const panel = $('#tab-module');
  let open = null; // {menu, btn}

  function close() {
    if (!open) return;
    open.menu.remove();
    open.btn.setAttribute('aria-expanded', 'false');
    open = null;
  }

  function bind(node, name, to) {
    close();
    node.setData(withBinding(node.getData(), name, to), { overwrite: true });
    pane.show(node);
  }

  function item(label, detail, attrs, onclick) {
    return button({ class: 'menu-item', role: 'menuitem', ...attrs, onclick }, h('span', { class: 'menu-name' }, label), h('span', { class: 'muted' }, detail));
  }

  function openMenu(btn) {
    const node = pane.node();
    const module = node && moduleOf(modules, node.getData());
    const mp = module && module.params.find((p) => p.name === btn.dataset.bind);
    if (!mp) return;
    close();
    const params = store.list();
    const items = bindable(mp, params).map((p) => item(p.name, describe(p), { 'data-to': p.name }, () => bind(node, mp.name, p.name)));
    const note = items.length ? null
      : muted(`No ${compatibleTypes(mp.type).join(' or ')} pipeline parameter yet${params.length ? ` (${mp.label} is ${mp.type})` : ''}.`);
    const fresh = paramFromModule(mp, (node.getData().parameters || {})[mp.name], params.map((p) => p.name));
    items.push(item(`+ New parameter ${fresh.name}`, describe(fresh), { 'data-new': fresh.name, class: 'menu-item new' }, () => {
      store.add(fresh);
      bind(node, mp.name, fresh.name);
    }));
    const menu = h('div', { class: 'bind-menu', role: 'menu', 'aria-label': `Bind ${mp.label} to a pipeline parameter` }, note, items);
    btn.closest('.field').querySelector('.field-head').after(menu);
    btn.setAttribute('aria-expanded', 'true');
    open = { menu, btn };
    items[0].focus();
  }

  panel.addEventListener('click', (e) => {
    const b = e.target.closest('[data-bind]');
    if (b) { if (open && open.btn === b) close(); else openMenu(b); return; }
    const u = e.target.closest('[data-unbind]');
    if (u && pane.node()) bind(pane.node(), u.dataset.unbind, null);
  });
  panel.addEventListener('keydown', (e) => {
    if (!open) return;
    if (e.key === 'Escape') {
      const { btn } = open;
      close();
      btn.focus();
    } else if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && open.menu.contains(e.target)) {
      e.preventDefault();
      const items = Array.from(open.menu.querySelectorAll('.menu-item'));
      const at = items.indexOf(e.target) + (e.key === 'ArrowDown' ? 1 : -1);
      items[(at + items.length) % items.length].focus();
    }
  });
  document.body.addEventListener('htmx:afterSwap', (e) => { if (e.detail.target === panel) open = null; });
}
