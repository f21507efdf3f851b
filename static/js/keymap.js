/* The keyboard shortcuts (pure): one table that binds the keys (editing.js through X6's keyboard
 * plugin, the quick search, the right-click menu and the "?" overlay with their own listeners)
 * and that the "?" overlay lists, so that the list shown cannot drift from the keys bound.
 *
 * An entry: id (the action), group (its heading in the list), what (its line in the list), and
 * either combos (Mousetrap's spelling: "ctrl+shift+z"; `canvas: true` when editing.js binds them
 * on the canvas, else the named module matches them with pressed()) or `shown` (a gesture, listed
 * only). */

export const SHORTCUTS = [
  { id: 'quick-search', group: 'Canvas', shown: ['Double-click', 'Type a letter'], what: 'Search the modules and add one there (linked from the module selected)' },
  { id: 'menu', group: 'Canvas', combos: ['shift+f10', 'contextmenu'], what: 'Menu of the selected module (or right-click a module or a link)' },
  { id: 'delete', group: 'Canvas', canvas: true, combos: ['delete', 'backspace'], what: 'Delete the selection' },
  { id: 'copy', group: 'Canvas', canvas: true, combos: ['ctrl+c', 'meta+c'], what: 'Copy the selected modules' },
  { id: 'paste', group: 'Canvas', canvas: true, combos: ['ctrl+v', 'meta+v'], what: 'Paste them beside the originals' },
  { id: 'undo', group: 'Canvas', canvas: true, combos: ['ctrl+z', 'meta+z'], what: 'Undo' },
  { id: 'redo', group: 'Canvas', canvas: true, combos: ['ctrl+shift+z', 'meta+shift+z', 'ctrl+y', 'meta+y'], what: 'Redo' },
  { id: 'select-all', group: 'Canvas', canvas: true, combos: ['ctrl+a', 'meta+a'], what: 'Select every module' },
  { id: 'deselect', group: 'Canvas', canvas: true, combos: ['escape'], what: 'Clear the selection' },
  { id: 'move', group: 'Canvas', canvas: true, combos: ['left', 'right', 'up', 'down'], what: 'Move the selection by 10 px' },
  { id: 'select-next', group: 'Canvas', canvas: true, combos: [']'], what: 'Select the next module (top to bottom, left to right)' },
  { id: 'select-previous', group: 'Canvas', canvas: true, combos: ['['], what: 'Select the previous module' },
  { id: 'zoom-in', group: 'Canvas', canvas: true, combos: ['ctrl+=', 'meta+=', 'ctrl+plus'], what: 'Zoom in' },
  { id: 'zoom-out', group: 'Canvas', canvas: true, combos: ['ctrl+-', 'meta+-'], what: 'Zoom out' },
  { id: 'fit', group: 'Canvas', canvas: true, combos: ['ctrl+0', 'meta+0'], what: 'Fit the pipeline to the screen' },
  { id: 'save', group: 'Canvas', canvas: true, combos: ['ctrl+s', 'meta+s'], what: 'Save now' },
  { id: 'pan', group: 'Mouse', shown: ['Right-drag'], what: 'Pan the canvas' },
  { id: 'multi', group: 'Mouse', shown: ['Shift+click', 'Ctrl+click'], what: 'Add a module to the selection' },
  { id: 'help', group: 'Page', combos: ['?'], what: 'Show this list (when no text field has the focus)' },
  { id: 'next', group: 'Quick search and menus', combos: ['down'], what: 'Next entry' },
  { id: 'previous', group: 'Quick search and menus', combos: ['up'], what: 'Previous entry' },
  { id: 'choose', group: 'Quick search and menus', combos: ['enter'], what: 'Add the module chosen, or run the menu item' },
  { id: 'close', group: 'Quick search and menus', combos: ['escape'], what: 'Close without a change' },
];

const byId = new Map(SHORTCUTS.map((s) => [s.id, s]));

/** The entry of an action. */
export function shortcut(id) {
  const s = byId.get(id);
  if (!s) throw new Error(`no shortcut ${id}`);
  return s;
}

// KeyboardEvent.key (lower case) of Mousetrap's key names
const KEY_OF = { left: 'arrowleft', right: 'arrowright', up: 'arrowup', down: 'arrowdown', plus: '+', del: 'delete', esc: 'escape', return: 'enter' };
const NAMES = { left: '←', right: '→', up: '↑', down: '↓', plus: '+', contextmenu: 'Menu key' };

/** Whether a keydown event is one of the combos of action `id`. A symbol ("?") ignores Shift,
 * which typing it may need. */
export function pressed(e, id) {
  return (shortcut(id).combos || []).some((combo) => {
    const parts = combo.split('+');
    const name = parts.pop() || '+';
    const mods = new Set(parts);
    if ((e.key || '').toLowerCase() !== (KEY_OF[name] || name)) return false;
    const symbol = name.length === 1 && !/[a-z0-9]/.test(name);
    return ['ctrl', 'alt', 'meta'].every((m) => mods.has(m) === !!e[`${m}Key`]) && (symbol || mods.has('shift') === !!e.shiftKey);
  });
}

/** "ctrl+shift+z" -> "Ctrl+Shift+Z", "left" -> "←", "shift+f10" -> "Shift+F10". */
export function keyText(combo) {
  const parts = combo.split('+');
  const name = parts.pop() || '+';
  const word = (w) => NAMES[w] || (w.length === 1 || /^f\d+$/.test(w) ? w.toUpperCase() : w[0].toUpperCase() + w.slice(1));
  return [...parts.map(word), word(name)].join('+');
}

/** The keys of an entry as the list shows them: Ctrl's combos (⌘ on a Mac does the same), each once. */
export function shownKeys(s) {
  if (s.shown) return s.shown;
  const combos = s.combos.filter((c) => !c.startsWith('meta+')).filter((c) => c !== 'ctrl+plus');
  return [...new Set(combos.map(keyText))];
}

/** The list: [[group, [entry, ...]], ...] in the table's order. */
export function groups() {
  const out = new Map();
  for (const s of SHORTCUTS) {
    if (!out.has(s.group)) out.set(s.group, []);
    out.get(s.group).push(s);
  }
  return [...out];
}
