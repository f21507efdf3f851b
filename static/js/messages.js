/* The page's messages: the banner over the canvas (errors, notes, a conflict) and the save state.
 * A banner tied to a condition (`holds`) goes by itself once the condition is over: whoever may
 * end it calls recheckBanner() (the problems view after each autosave answer, for one). */
import { $, button, h, withCode } from './dom.js';

const NOTE_MS = 4000; // an info note clears by itself after this; errors stay until dismissed
/** @type {number | undefined} */
let noteTimer;
/** @type {(() => boolean) | null} */
let holds = null; // the condition of the banner shown, if it has one

function hide(el) {
  clearTimeout(noteTimer);
  holds = null;
  el.hidden = true;
}

/** Show `text` in a banner with action buttons ([label, fn]); no text hides it. An info note
 * without actions clears by itself unless `stays`; a banner with `holds` (() => bool) goes once
 * holds() answers false at a recheckBanner(). */
export function banner(text, { actions = [], kind = 'error', el = $('#banner'), stays = false, holds: condition = null } = {}) {
  clearTimeout(noteTimer);
  holds = null;
  el.className = `banner ${kind}`;
  if (!text) { el.replaceChildren(); el.hidden = true; return; }
  const close = button({ class: 'close', 'aria-label': 'Dismiss', title: 'Dismiss', onclick: () => hide(el) }, '×');
  const parts = [h('span', {}, withCode(text)), ...actions.map(([label, fn]) => button({ onclick: fn }, label))];
  // a conflict stays until the page is reloaded
  el.replaceChildren(...parts, ...(kind === 'conflict' ? [] : [close]));
  el.hidden = false;
  holds = condition;
  if (kind === 'info' && !actions.length && !stays) noteTimer = setTimeout(() => hide(el), NOTE_MS);
}

/** The condition of the banner shown may have ended: hide the banner if it has. */
export function recheckBanner(el = $('#banner')) {
  if (holds && !el.hidden && !holds()) hide(el);
}

export function setSaveState(text, cls = '') {
  const el = $('#save-state');
  el.textContent = text;
  el.className = `save-state ${cls}`;
}
