/* The "?" overlay: the keyboard shortcuts, listed from the table that binds them (keymap.js).
 * Opened by the "?" key (when no text field has the focus) or the toolbar's "?" button; Escape or
 * Close shuts it and gives the focus back to where it was. */
import { button, h } from './dom.js';
import { groups, pressed, shownKeys } from './keymap.js';

/** Whether typing goes into the element (a "?" there is text, not a shortcut). */
function takesText(el) {
  if (!el || !el.closest) return false;
  if (el.closest('textarea, select, [contenteditable=""], [contenteditable=true]')) return true;
  return el.tagName === 'INPUT' && !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color', 'file'].includes(el.type);
}

function table() {
  return groups().map(([group, entries]) => h('section', { class: 'shortcut-group' },
    h('h3', {}, group),
    h('dl', {}, entries.map((s) => h('div', { class: 'shortcut', 'data-shortcut': s.id },
      h('dt', {}, shownKeys(s).flatMap((k, i) => [i ? h('span', { class: 'or' }, ' or ') : null, h('kbd', {}, k)])),
      h('dd', {}, s.what))))));
}

/** opener: the toolbar's "?" button. */
export function shortcutsHelp(opener) {
  let dialog = null;

  function open() {
    if (dialog) return;
    const back = document.activeElement;
    const close = button({ class: 'close', id: 'shortcuts-close', 'aria-label': 'Close' }, '×');
    dialog = h('dialog', { id: 'shortcuts-dialog', class: 'dialog wide shortcuts', 'aria-labelledby': 'shortcuts-title' },
      h('div', { class: 'dialog-head' }, h('h2', { id: 'shortcuts-title' }, 'Keyboard shortcuts'), close),
      h('div', { class: 'dialog-body shortcut-list' }, table()));
    close.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      dialog = null;
      if (back && back.isConnected) back.focus({ preventScroll: true });
    });
    document.body.append(dialog);
    dialog.showModal();
    close.focus();
  }

  opener.addEventListener('click', open);
  document.addEventListener('keydown', (e) => {
    if (!pressed(e, 'help') || takesText(e.target) || document.querySelector('dialog[open]')) return;
    e.preventDefault();
    open();
  });
  return { open };
}
