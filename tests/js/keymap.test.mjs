import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SHORTCUTS, groups, keyText, pressed, shortcut, shownKeys } from '../../static/js/keymap.js';

const key = (k, mods = {}) => ({ key: k, ctrlKey: false, shiftKey: false, altKey: false, metaKey: false, ...mods });

test('a keydown is matched to the combos of its action, modifiers included', () => {
  assert.ok(pressed(key('z', { ctrlKey: true }), 'undo'));
  assert.ok(!pressed(key('z', { ctrlKey: true, shiftKey: true }), 'undo'));
  assert.ok(pressed(key('Z', { ctrlKey: true, shiftKey: true }), 'redo'));
  assert.ok(pressed(key('F10', { shiftKey: true }), 'menu'));
  assert.ok(!pressed(key('F10'), 'menu'));
  assert.ok(pressed(key('ContextMenu'), 'menu'));
  assert.ok(pressed(key('ArrowDown'), 'next'));
  assert.ok(pressed(key('Escape'), 'close'));
});

test('a symbol matches whether or not typing it took Shift', () => {
  assert.ok(pressed(key('?', { shiftKey: true }), 'help'));
  assert.ok(pressed(key('?'), 'help'));
  assert.ok(!pressed(key('?', { ctrlKey: true }), 'help'));
  assert.ok(!pressed(key('/'), 'help'));
});

test('keys are shown as people read them, a Mac\'s ⌘ variants once as Ctrl', () => {
  assert.equal(keyText('ctrl+shift+z'), 'Ctrl+Shift+Z');
  assert.equal(keyText('shift+f10'), 'Shift+F10');
  assert.equal(keyText('left'), '←');
  assert.equal(keyText('ctrl+='), 'Ctrl+=');
  assert.deepEqual(shownKeys(shortcut('redo')), ['Ctrl+Shift+Z', 'Ctrl+Y']);
  assert.deepEqual(shownKeys(shortcut('zoom-in')), ['Ctrl+=']);
  assert.deepEqual(shownKeys(shortcut('menu')), ['Shift+F10', 'Menu key']);
  assert.deepEqual(shownKeys(shortcut('quick-search')), ['Double-click', 'Type a letter']);
});

test('every entry says what it does and has keys or a gesture; ids are unique; groups keep the order', () => {
  assert.equal(new Set(SHORTCUTS.map((s) => s.id)).size, SHORTCUTS.length);
  for (const s of SHORTCUTS) assert.ok(s.what && (s.combos || s.shown).length, s.id);
  assert.deepEqual(groups().map(([g]) => g), ['Canvas', 'Mouse', 'Page', 'Quick search and menus']);
  assert.throws(() => shortcut('nope'));
});
