/* Canvas quick search (as ComfyUI's): a double-click on the blank canvas, or a letter typed while
 * the canvas has the focus, opens a search box of the palette's entries (modules, the user's
 * datasets, registered models) at that point; the one chosen (arrows and Enter, or a click) is
 * added there, fed from the module selected alone, so that a pipeline can be built from the keyboard. */
import { $$, h } from './dom.js';
import { NODE_H, NODE_W, nodeLabel } from './cells.js';
import { placeInView } from './contextmenu.js';
import { pressed } from './keymap.js';
import { droppedNote, feedOf, ranked } from './quickadd.js';
import { moduleOf } from './rules.js';
import { OUT, portId } from './document.js';

const GAP = 60; // between a module and the one added below it

/** The palette's entries, read as the box opens (an upload or a registered model adds some). */
function paletteEntries(modules) {
  return $$('.palette-item').map((b) => {
    const { kind, dataset, model } = b.dataset;
    const module = modules.get(kind);
    const where = dataset ? `${module.label} · My datasets` : model ? `${module.label} · My models` : module.category;
    return { label: (model || b.textContent).trim(), text: b.textContent, kind, dataset, model, module, where };
  });
}

/** edits: editing.js (add). */
export function quickSearch(canvas, catalogue, edits) {
  const { graph, container } = canvas;
  let close = () => {};

  /** Below node `from`, moved right past any module already there. */
  function spotBelow(from) {
    const b = from.getBBox();
    return canvas.freeSpot({ x: b.x, y: b.y + b.height + GAP });
  }

  /**
   * Open the box. at: {client, local} of a double-click or of a link's drop, or null (typed: below
   * the module selected, or mid-canvas); source: {node, port} of a link dropped on the blank
   * canvas (the module added is fed from that output), else the module selected feeds it.
   */
  function open(at, text, source = null) {
    close();
    const nodes = canvas.selectedNodes();
    const from = source ? source.node : nodes.length === 1 && nodes[0].getData().kind ? nodes[0] : null;
    const fromPort = source ? source.port : null;
    const fromDoc = from ? { id: from.id, kind: from.getData().kind, version: from.getData().version } : null;
    const feed = (kind) => (fromDoc ? feedOf(catalogue.modules, fromDoc, { id: '', kind }, canvas.links(), fromPort) : null);
    const fromModule = from ? moduleOf(catalogue.modules, fromDoc) : null;
    const output = fromPort && fromModule ? fromModule.outputs.find((o) => portId(OUT, o.name) === fromPort) : null;
    const fromLabel = from ? nodeLabel(canvas.doc(from), fromModule, catalogue.datasets) + (output ? ` (${output.label})` : '') : '';
    const entries = paletteEntries(catalogue.modules);
    let shown = [];
    let active = 0;

    const input = h('input', { type: 'search', role: 'combobox', 'aria-label': 'Search modules', 'aria-autocomplete': 'list',
      'aria-expanded': 'true', 'aria-controls': 'quick-search-list', placeholder: 'Search modules…', autocomplete: 'off' });
    const list = h('ul', { role: 'listbox', id: 'quick-search-list', 'aria-label': 'Modules' });
    const none = h('p', { class: 'quick-empty', hidden: true }, 'No module matches.');
    // a dropped link whose output no module takes: said once, rather than every module marked "not linked"
    const taken = !source || entries.some((e) => feed(e.kind));
    const note = from && fromModule && fromModule.outputs.length
      ? h('p', { class: 'quick-note', id: 'quick-search-note' }, droppedNote(fromLabel, output, taken)) : null;
    const box = h('div', { class: 'quick-search', id: 'quick-search', role: 'dialog', 'aria-label': 'Add a module' }, input, note, list, none);

    function render() {
      shown = taken || input.value.trim() ? ranked(entries, input.value) : [];
      // from a dropped link, the modules that take its output come first (as ComfyUI lists them)
      if (source) shown = [...shown.filter((e) => feed(e.kind)), ...shown.filter((e) => !feed(e.kind))];
      active = Math.min(active, Math.max(0, shown.length - 1));
      list.replaceChildren(...shown.map((e, i) => h('li', { role: 'option', id: `quick-search-${i}`, 'aria-selected': String(i === active), 'data-kind': e.kind },
        h('span', { class: 'quick-label' }, e.label),
        h('span', { class: 'quick-where' }, e.where),
        fromDoc && note && taken && !feed(e.kind) ? h('span', { class: 'quick-nolink', title: `no input of it accepts ${fromLabel}'s output` }, 'not linked') : null)));
      none.hidden = shown.length > 0 || !input.value.trim();
      if (shown.length) input.setAttribute('aria-activedescendant', `quick-search-${active}`); else input.removeAttribute('aria-activedescendant');
      const li = list.children[active];
      if (li) li.scrollIntoView({ block: 'nearest' });
    }
    function move(by) {
      if (!shown.length) return;
      active = (active + by + shown.length) % shown.length;
      render();
    }
    function choose(e) {
      if (!e) return;
      const pos = at ? { x: at.local.x - NODE_W / 2, y: at.local.y - NODE_H / 2 } : from ? spotBelow(from) : null;
      close();
      edits.add(e.kind, e.dataset, e.model ? { model: e.model } : {}, pos, fromDoc ? (doc) => feedOf(catalogue.modules, fromDoc, doc, canvas.links(), fromPort) : null);
    }

    input.addEventListener('input', () => { active = 0; render(); });
    input.addEventListener('keydown', (e) => {
      if (pressed(e, 'next')) move(1);
      else if (pressed(e, 'previous')) move(-1);
      else if (pressed(e, 'choose')) choose(shown[active]);
      else if (pressed(e, 'close')) { close(); canvas.focus(); } else return;
      e.preventDefault();
      e.stopPropagation();
    });
    // a click on an entry adds it (the press keeps the focus in the box)
    list.addEventListener('mousedown', (e) => e.preventDefault());
    list.addEventListener('click', (e) => {
      const li = e.target.closest('[role=option]');
      if (li) choose(shown[Array.prototype.indexOf.call(list.children, li)]);
    });
    box.addEventListener('focusout', (e) => { if (!box.contains(e.relatedTarget)) close(); });
    close = () => { close = () => {}; box.remove(); };

    document.body.append(box);
    input.value = text;
    render();
    const c = container.getBoundingClientRect();
    const point = at ? at.client : from ? graph.localToClient(spotBelow(from)) : { x: c.left + c.width / 2 - 160, y: c.top + c.height / 3 };
    placeInView(box, point.x, point.y, c); // over the canvas, not over the panes beside it
    input.focus();
  }

  graph.on('blank:dblclick', ({ e, x, y }) => open({ client: { x: e.clientX, y: e.clientY }, local: { x, y } }, ''));
  // a link dropped on the blank canvas: what to add there, fed from that output (as ComfyUI does);
  // once the drop's mouseup is over (X6 then focuses the canvas, which would close the box)
  canvas.onLinkDropped(({ node, port, at }) => setTimeout(() => open({ client: graph.localToClient(at), local: at }, '', { node, port })));
  // a letter (or digit) typed on the canvas starts a search with it
  container.addEventListener('keydown', (e) => {
    if (document.activeElement !== container || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    if (e.key.length !== 1 || !/[\p{L}\p{N}]/u.test(e.key)) return;
    e.preventDefault();
    open(null, e.key);
  });
  return { open };
}
