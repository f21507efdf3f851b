/* The right-click menu of a module or a link (also Shift+F10 or the Menu key for the one
 * selected): run settings, regenerate output, duplicate, delete, view outputs, view the log.
 * A right-button press and release without moving opens it; a right-drag pans the canvas (X6). */
import { $, button, h } from './dom.js';
import { editedData } from './document.js';
import { nodeLabel } from './cells.js';
import { pressed } from './keymap.js';
import { moduleOf } from './rules.js';

const MARGIN = 4; // from the window's edges
const STILL = 4; // px: a right press that moves more is a pan

/**
 * Put a fixed box with its top-left at (x, y), moved in so that all of it stays in `bounds` (a
 * client rect: the window by default; the canvas for the quick search, which spilt over the
 * details pane when a link was dropped near the canvas's right edge: issue 42).
 */
export function placeInView(el, x, y, bounds = { left: 0, top: 0, right: window.innerWidth, bottom: window.innerHeight }) {
  el.style.left = '0px';
  el.style.top = '0px';
  const r = el.getBoundingClientRect();
  const left = Math.max(bounds.left + MARGIN, Math.min(x, bounds.right - r.width - MARGIN));
  // no room below: above the point
  const top = y + r.height > bounds.bottom - MARGIN ? Math.max(bounds.top + MARGIN, y - r.height) : y;
  el.style.left = `${Math.round(left)}px`;
  el.style.top = `${Math.round(top)}px`;
}

/** Run fn once an element matching `sel` is in `root` (now, or when it comes), within 15 s. */
function when(root, sel, fn) {
  const found = () => $(sel, root);
  if (found()) { fn(found()); return; }
  const watch = new MutationObserver(() => { if (found()) { watch.disconnect(); fn(found()); } });
  watch.observe(root, { childList: true, subtree: true });
  setTimeout(() => watch.disconnect(), 15000);
}

/**
 * edits: editing.js (duplicate, removeCells); tab(name): show a tab of the right pane for the
 * node selected. Returns {open(cell, x, y)}.
 */
export function contextMenu(canvas, catalogue, edits, tab) {
  const { graph, container } = canvas;
  let close = () => {};

  const focusIn = (el, focus = el) => { el.scrollIntoView({ block: 'start' }); focus.focus({ preventScroll: true }); };
  const hasRunSettings = (m) => !!(m && (m.distributed || m.timeout_setting));

  function nodeItems(node) {
    const data = node.getData();
    const m = moduleOf(catalogue.modules, data);
    // the tab asked for, in the details pane (shown again if it was hidden: shell.js)
    const show = (name) => {
      canvas.select(node);
      tab(name);
      $(`#tab-${name}`).dispatchEvent(new CustomEvent('pane:show', { bubbles: true }));
    };
    return [
      hasRunSettings(m) && ['Run settings', () => {
        show('module');
        when($('#tab-module'), `#node-form[data-node="${node.id}"] [data-run-setting]`, (input) => focusIn(input.closest('fieldset'), input));
      }],
      ['Regenerate output', () => {
        const checked = !data.regenerate_output;
        node.setData(editedData(node.getData(), { regenerate: true, checked }), { overwrite: true });
        // the Module tab's box says the same (it is the same field)
        const box = $(`#node-form[data-node="${node.id}"] [data-regenerate]`);
        if (box) box.checked = checked;
        canvas.focus();
      }, !!data.regenerate_output],
      ['Duplicate', () => edits.duplicate(node)],
      ['Delete', () => { edits.removeCells([node]); canvas.focus(); }],
      ['View outputs', () => { show('outputs'); canvas.focus(); }],
      ['View log', () => {
        $('#tab-outputs').replaceChildren(); // what it showed may be another module's log
        show('outputs');
        // the log, "No log yet", or what is missing (no run shown)
        when($('#tab-outputs'), '#log-text, #no-log, :scope > p.muted:only-child', (el) => focusIn(el));
      }],
    ].filter(Boolean);
  }

  function open(cell, x, y) {
    close();
    const opener = document.activeElement;
    const isNode = cell.isNode();
    if (isNode && !canvas.selectedNodes().includes(cell)) canvas.select(cell);
    const title = isNode ? nodeLabel(canvas.doc(cell), moduleOf(catalogue.modules, cell.getData()), catalogue.datasets) : 'Link';
    const items = isNode ? nodeItems(cell) : [['Delete', () => { edits.removeCells([cell]); canvas.focus(); }]];
    const buttons = items.map(([label, run, checked]) => {
      const b = button({ role: checked === undefined ? 'menuitem' : 'menuitemcheckbox', tabindex: '-1', class: 'menu-item' }, label);
      if (checked !== undefined) b.setAttribute('aria-checked', String(checked));
      b.addEventListener('click', () => { close(); run(); });
      return b;
    });
    const menu = h('div', { class: 'context-menu', id: 'context-menu', role: 'menu', 'aria-label': title },
      h('p', { class: 'menu-title', 'aria-hidden': 'true' }, title), buttons);
    const at = (i) => { const n = buttons.length; buttons[(i + n) % n].focus(); };
    const index = () => buttons.indexOf(document.activeElement);
    menu.addEventListener('keydown', (e) => {
      if (pressed(e, 'next')) at(index() + 1);
      else if (pressed(e, 'previous')) at(index() - 1);
      else if (e.key === 'Home') at(0);
      else if (e.key === 'End') at(-1);
      else if (pressed(e, 'choose') || e.key === ' ') { if (index() >= 0) buttons[index()].click(); } else if (pressed(e, 'close')) { close(); if (opener === container) canvas.focus(); } else if (e.key === 'Tab') close();
      else return;
      e.preventDefault();
    });
    menu.addEventListener('focusout', (e) => { if (!menu.contains(e.relatedTarget)) close(); });
    menu.addEventListener('contextmenu', (e) => e.preventDefault());
    const outside = (e) => { if (!menu.contains(e.target)) close(); };
    document.addEventListener('pointerdown', outside, true);
    close = () => { close = () => {}; document.removeEventListener('pointerdown', outside, true); menu.remove(); };
    document.body.append(menu);
    placeInView(menu, x, y);
    at(0);
  }

  // the right button: X6 pans on a press, the browser's own menu is kept away (X6 too)
  let press = null;
  container.addEventListener('mousedown', (e) => {
    if (e.button !== 2) return;
    const view = graph.findViewByElem(e.target);
    press = { x: e.clientX, y: e.clientY, cell: view ? view.cell : null };
  }, true);
  window.addEventListener('mouseup', (e) => {
    if (e.button !== 2 || !press) return;
    const p = press;
    press = null;
    if (p.cell && Math.abs(e.clientX - p.x) + Math.abs(e.clientY - p.y) <= STILL) open(p.cell, e.clientX, e.clientY);
  });
  // from the keyboard: the cell selected alone, the menu below its top-left corner
  container.addEventListener('keydown', (e) => {
    if (!pressed(e, 'menu')) return;
    e.preventDefault();
    const cells = canvas.selection.getSelectedCells();
    if (cells.length !== 1) return;
    const b = graph.localToClient(cells[0].getBBox());
    open(cells[0], b.x + 16, b.y + Math.min(b.height, 40));
  });
  return { open };
}
