/* The one way this page builds DOM: h(tag, attrs, ...children), svg() for SVG. Text goes in as
 * text nodes, never as HTML; an attribute "on<event>" with a function adds a listener. */

import { codeParts } from './format.js';

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** The same for SVG (a chart drawn as shapes): svg('line', { x1: 0, ... }). */
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

/** A grey note, such as "No runs yet." */
export const muted = (text) => h('p', { class: 'muted' }, text);

/** A button (type=button, so that it never sends a form). */
export const button = (attrs, ...children) => h('button', { type: 'button', ...attrs }, ...children);

/** A server message as nodes: its `quoted` parts (a command, a field) in <code>. */
export const withCode = (text) => codeParts(text).map(([t, code]) => (code ? h('code', {}, t) : t));
