/* The pipeline's problems, as the server's last answer lists them: drawn on the nodes, ports and
 * links, listed below the canvas, and marked on the node pane's fields. */
import { $, $$, button, h } from './dom.js';
import { portName } from './document.js';
import { PROBLEM_RED } from './cells.js';
import { SILENT } from './canvas.js';
import { recheckBanner } from './messages.js';
import { moduleOf } from './rules.js';

const text = (p) => p.text || p.message;

/** Problems grouped: messages by node, a message by "node|input port", the bad links. */
export function problemMarks(problems) {
  const byNode = new Map();
  const ports = new Map();
  const links = new Set();
  for (const p of problems) {
    if (p.node) {
      if (!byNode.has(p.node)) byNode.set(p.node, []);
      byNode.get(p.node).push(text(p));
    }
    if (p.node && p.port) ports.set(`${p.node}|${p.port}`, p.message);
    if (p.link) links.add(p.link);
  }
  return { byNode, ports, links };
}

export function problemsView(canvas, modules, initial) {
  const { graph } = canvas;
  let problems = initial;
  let painted = { nodes: new Set(), links: new Set() };
  // Marking a port draws all its node's ports again; a link being dragged onto one of them then
  // vanishes on release (seen when an autosave answer lands mid-drag). So while a mouse button is
  // down on the canvas, the marks wait, and are drawn once it is released.
  let pointerDown = false;
  let pending = false;
  canvas.container.addEventListener('mousedown', () => { pointerDown = true; }, true);
  window.addEventListener('mouseup', () => { // capture: X6 may stop the event before it bubbles up
    if (!pointerDown) return;
    pointerDown = false;
    if (pending) setTimeout(paint, 0); // after X6 has handled the release
  }, true);

  function paintNode(n, msgs, ports) {
    const title = msgs.length ? msgs.join('\n') : (moduleOf(modules, n.getData()) || {}).label || n.getData().kind;
    n.attr({ body: { stroke: msgs.length ? PROBLEM_RED : '#8c959f', strokeWidth: msgs.length ? 2 : 1, 'data-problems': msgs.length || null, title },
      badge: { text: msgs.length ? `⚠ ${msgs.length}` : '' } }, SILENT);
    for (const port of n.getPorts()) {
      const bad = port.group === 'in' ? ports.get(`${n.id}|${portName(port.id)}`) : null;
      n.setPortProp(port.id, 'attrs/circle/stroke', bad ? PROBLEM_RED : '#57606a', SILENT);
      n.setPortProp(port.id, 'attrs/circle/data-problem', bad || null, SILENT);
    }
  }

  function paintCanvas(marks) {
    graph.batchUpdate(() => {
      // only the nodes and links whose marks change: a 200-node pipeline opens without problems
      for (const id of new Set([...painted.nodes, ...marks.byNode.keys()])) {
        const n = graph.getCellById(id);
        if (n && n.isNode()) paintNode(n, marks.byNode.get(n.id) || [], marks.ports);
      }
      for (const id of new Set([...painted.links, ...marks.links])) {
        const e = graph.getCellById(id);
        if (e && e.isEdge()) e.attr('line/stroke', marks.links.has(e.id) ? PROBLEM_RED : '#57606a', SILENT);
      }
    }, SILENT);
    painted = { nodes: new Set(marks.byNode.keys()), links: marks.links };
  }

  /** @type {(name: string) => void} */
  let showParam = () => {}; // set by the page: show a pipeline parameter's card
  function goTo(p) {
    const n = p.node && graph.getCellById(p.node);
    if (n) { canvas.select(n); graph.centerCell(n); } else if (p.pipeline_parameter) showParam(p.pipeline_parameter);
  }

  /** @type {(node: any) => void} */
  let fixed = () => {}; // set by the page: show the node's form again
  function applyFix(p, fix) {
    const n = p.node && graph.getCellById(p.node);
    if (!n || !n.isNode()) return;
    const data = n.getData();
    n.setData({ ...data, parameters: { ...(data.parameters || {}), ...fix.parameters } }, { overwrite: true });
    fixed(n);
  }

  let barSays = null; // what the bar says: drawn again only when that changes (a screen reader reads it out)
  function paintBar() {
    const bar = $('#problems');
    const says = problems.length ? problems.map(text).join('\n') : `${graph.getNodes().length > 0}`;
    if (says === barSays && bar.childNodes.length) return;
    barSays = says;
    if (!problems.length) {
      bar.replaceChildren(graph.getNodes().length ? 'No problems: ready to submit.' : 'Drag modules from the palette onto the canvas.');
      bar.className = 'problems-bar ok';
      return;
    }
    bar.className = 'problems-bar bad';
    bar.replaceChildren(
      h('strong', {}, `${problems.length} problem(s): `),
      h('ul', {}, problems.map((p) => h('li', {}, button({ class: 'link', onclick: () => goTo(p) }, text(p)),
        // the server's ways out (a pretrained model whose weights are not there): one click each
        ...(p.fixes || []).map((f) => button({ class: 'fix', 'data-fix': JSON.stringify(f.parameters), onclick: () => applyFix(p, f) }, f.label))))),
    );
  }

  /** The node pane's fields: each one's problems under it. */
  function markPane() {
    const form = $('#node-form');
    if (!form) return;
    const mine = problems.filter((p) => p.node === form.dataset.node && p.param);
    for (const field of $$('.field', form)) {
      const error = $(`#error-${CSS.escape(field.dataset.field)}`, form);
      // what only the pane's server knows (a dataset that is not the user's) stays with the rest
      const found = [...mine.filter((p) => p.param === field.dataset.field).map((p) => p.message), error.dataset.paneError].filter(Boolean);
      error.textContent = found.join(' ');
      field.classList.toggle('invalid', found.length > 0);
      const input = $('input, select, textarea', field);
      if (input) input.toggleAttribute('aria-invalid', found.length > 0);
    }
  }

  function paint() {
    if (pointerDown) { pending = true; return; }
    pending = false;
    paintCanvas(problemMarks(problems));
    paintBar();
    markPane();
  }

  return {
    list: () => problems,
    // a banner about the problems ("cannot run") goes with the last of them
    set(next) { problems = next || []; paint(); recheckBanner(); },
    paint,
    markPane,
    /** A problem about a pipeline parameter alone, clicked: show(name) brings its card into view. */
    onParamProblem(show) { showParam = show; },
    /** A fix applied to a node (a problem's button): shown(node) shows its form with the new values. */
    onFixed(shown) { fixed = shown; },
  };
}
