/* The page's messages: the banner above the canvas (errors, notes, a conflict) and the save state. */
import { $, button, h } from './dom.js';

const NOTE_MS = 4000; // an info note clears by itself after this; errors stay until dismissed
let noteTimer = null;

/** Show `text` in a banner with action buttons ([label, fn]); no text hides it. An info note
 * without actions clears by itself unless `stays`. */
export function banner(text, { actions = [], kind = 'error', el = $('#banner'), stays = false } = {}) {
  clearTimeout(noteTimer);
  el.className = `banner ${kind}`;
  if (!text) { el.replaceChildren(); el.hidden = true; return; }
  const close = button({ class: 'close', 'aria-label': 'Dismiss', onclick: () => { el.hidden = true; } }, '×');
  const parts = [h('span', {}, text), ...actions.map(([label, fn]) => button({ onclick: fn }, label))];
  // a conflict stays until the page is reloaded
  el.replaceChildren(...parts, ...(kind === 'conflict' ? [] : [close]));
  el.hidden = false;
  if (kind === 'info' && !actions.length && !stays) noteTimer = setTimeout(() => { el.hidden = true; }, NOTE_MS);
}

export function setSaveState(text, cls = '') {
  const el = $('#save-state');
  el.textContent = text;
  el.className = `save-state ${cls}`;
}
