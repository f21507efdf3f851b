/* The right pane: its tabs, and the Module tab (the selected node's parameters, an htmx
 * fragment from the server; each edit goes back into the node's data, saved by autosave). */
import { $, $$, muted } from './dom.js';
import { scalingNote } from './scaling.js';
import { editedData } from './document.js';

/** The tabs (the ARIA tabs pattern: Tab reaches the chosen one, arrows, Home and End move among
 * them); onShow(name) runs after a tab is chosen by a click or a key. */
export function tabs(onShow) {
  let current = 'module';
  const buttons = $$('.tabs [role=tab]');
  function show(name) {
    current = name;
    for (const b of buttons) {
      b.setAttribute('aria-selected', String(b.dataset.tab === name));
      b.tabIndex = b.dataset.tab === name ? 0 : -1;
    }
    for (const p of $$('.tab-panel')) p.hidden = p.id !== `tab-${name}`;
  }
  const choose = (b) => { show(b.dataset.tab); onShow(b.dataset.tab); };
  for (const b of buttons) b.addEventListener('click', () => choose(b));
  $('.tabs[role=tablist]').addEventListener('keydown', (e) => {
    const at = buttons.indexOf(document.activeElement);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: buttons.length - 1 }[e.key];
    if (at < 0 || to === undefined) return;
    e.preventDefault();
    const b = buttons[(to + buttons.length) % buttons.length];
    b.focus();
    choose(b);
  });
  show(current);
  return { show, current: () => current };
}

/** What an input of the pane edits (see document.js editedData). */
const fieldOf = (input) => ({
  param: input.dataset.param, type: input.dataset.type, runSetting: input.dataset.runSetting,
  comment: input.hasAttribute('data-comment'), regenerate: input.hasAttribute('data-regenerate'),
  value: input.value, checked: input.checked,
});

/**
 * The Module tab of the node selected alone. paneUrl renders a node's form;
 * onSwap() runs once a form is in (to mark its problems); empty(panel) fills it when no node is
 * selected alone (the pipeline's own settings).
 */
export function nodePane(canvas, paneUrl, onSwap, empty) {
  const panel = $('#tab-module');
  let node = null;
  let many = 0; // how many nodes the "N modules selected" message counts (0: not shown)
  // each form asked for is numbered: a form that comes in after the selection moved on is dropped
  let ticket = 0;

  function show(next) {
    node = next;
    many = 0;
    ticket += 1;
    if (!node) { panel.replaceChildren(muted('Select a module on the canvas to see its parameters.')); empty(panel); return; }
    const doc = canvas.doc(node);
    // the heading names the module by its label; by its id too only where another module shares it
    const twin = canvas.graph.getNodes().some((n) => n !== node && canvas.doc(n).kind === doc.kind);
    htmx.ajax('POST', paneUrl, { target: '#tab-module', swap: 'innerHTML', headers: { 'X-Pane-Ticket': String(ticket) }, values: { node: JSON.stringify(doc), twin: twin ? '1' : '' } });
  }

  /** Show what the selection is: one node's form, "N modules selected", or the empty state. */
  function follow(nodes) {
    if (nodes.length > 1) {
      if (many === nodes.length) return;
      show(null);
      many = nodes.length;
      panel.replaceChildren(muted(`${many} modules selected. Select one to see its parameters.`));
      return;
    }
    const next = nodes[0] || null;
    if (next !== node || many) show(next);
  }

  // a form asked for before the last show() is stale: drop it
  document.body.addEventListener('htmx:beforeSwap', (e) => {
    if (e.detail.target !== panel) return;
    const headers = (e.detail.requestConfig && e.detail.requestConfig.headers) || {};
    if (headers['X-Pane-Ticket'] && headers['X-Pane-Ticket'] !== String(ticket)) e.detail.shouldSwap = false;
  });

  function onEdit(e) {
    const form = e.target.closest('#node-form');
    if (!form || !node || form.dataset.node !== node.id) return;
    const data = editedData(node.getData(), fieldOf(e.target));
    if (data) node.setData(data, { overwrite: true });
    noteScaling();
  }

  // under a training's run settings: what several processes change (Batch size is per process)
  function noteScaling() {
    const note = panel.querySelector('#scale-note');
    if (!note || !node) return;
    note.textContent = scalingNote(node.getData(), canvas.module(node));
    note.hidden = !note.textContent;
  }

  document.body.addEventListener('htmx:afterSwap', (e) => { if (e.detail.target === panel) { noteScaling(); onSwap(); } });
  panel.addEventListener('change', onEdit);
  // Enter in a field must not send the form: edits are saved by autosave (no inline handler: CSP)
  panel.addEventListener('submit', (e) => e.preventDefault());
  panel.addEventListener('input', (e) => { if (e.target.type !== 'checkbox' && e.target.tagName !== 'SELECT') onEdit(e); });

  const { graph } = canvas;
  // an undo or redo may take the node away, or change what its form shows
  for (const ev of ['history:undo', 'history:redo']) {
    graph.on(ev, () => { if (node) show(graph.getCellById(node.id) ? node : null); });
  }
  graph.on('cell:removed', ({ cell }) => { if (cell === node) show(null); });
  return { show, follow, node: () => node };
}
