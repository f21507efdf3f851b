/* The designer page: palette, canvas (AntV X6), autosave, problems, runs watched live.
 *
 * The canvas holds the pipeline: each X6 node is a pipeline node (its `data` is the node's JSON
 * minus the id), each edge a link. Ports are named "in:<port>" and "out:<port>" because a module
 * may have an input and an output of the same name. The server is the judge of validity: every
 * save answers with the pipeline's problems, which are drawn on the nodes, ports and links.
 * Run status paints never enter the undo history (option `ignoreHistory`).
 */
(() => {
  'use strict';

  performance.mark('designer:start');
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const boot = JSON.parse($('#designer-boot').textContent);
  const modules = new Map(boot.modules.map((m) => [m.kind, m]));
  const csrf = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
  const paneUrl = $('.designer').dataset.paneUrl;
  const NODE_W = 200;
  const NODE_H = 54;
  const SILENT = { ignoreHistory: true };
  const STATUS_COLOURS = {
    queued: '#8c959f', pending: '#8c959f', running: '#0969da', completed: '#1a7f37', failed: '#cf222e',
    reused: '#8250df', cancelled: '#bc4c00', not_run: '#afb8c1',
  };

  let loading = true;
  const state = {
    revision: boot.revision,
    extra: Object.fromEntries(Object.entries(boot.draft).filter(([k]) => !['nodes', 'links', 'layout'].includes(k))),
    problems: boot.problems || [],
    saving: false, again: false, dirty: false, conflict: false, saveTimer: null,
    clipboard: null,
    run: null, // the run shown on the canvas: {id, status, nodes: {...}}
    lastEventId: 0, ws: null, wsRetry: 0, metrics: {}, logTimer: null,
  };

  // ------------------------------------------------------------------ messages

  function banner(text, { actions = [], kind = 'error', el = $('#banner') } = {}) {
    el.replaceChildren();
    el.className = `banner ${kind}`;
    if (!text) { el.hidden = true; return; }
    const p = document.createElement('span');
    p.textContent = text;
    el.append(p);
    for (const [label, fn] of actions) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.addEventListener('click', fn);
      el.append(b);
    }
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'close';
    close.setAttribute('aria-label', 'Dismiss');
    close.textContent = '×';
    close.addEventListener('click', () => { el.hidden = true; });
    if (kind !== 'conflict') el.append(close);
    el.hidden = false;
  }

  async function api(method, url, body) {
    const opts = { method, headers: { 'X-CSRFToken': csrf, Accept: 'application/json' } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(url, opts);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    return { ok: r.ok, status: r.status, data };
  }

  // ------------------------------------------------------------------ node shape

  X6.Graph.registerNode('pd-module', {
    inherit: 'rect',
    width: NODE_W,
    height: NODE_H,
    markup: [
      { tagName: 'rect', selector: 'body' },
      { tagName: 'rect', selector: 'stripe' },
      { tagName: 'text', selector: 'label' },
      { tagName: 'text', selector: 'status' },
      { tagName: 'text', selector: 'badge' },
    ],
    attrs: {
      body: { refWidth: '100%', refHeight: '100%', rx: 6, ry: 6, fill: '#fff', stroke: '#8c959f', strokeWidth: 1 },
      stripe: { width: 6, refHeight: '100%', rx: 3, ry: 3, fill: '#d0d7de' },
      label: { refX: 16, refY: 19, fontSize: 13, fill: '#1b1f24', textAnchor: 'start', textVerticalAnchor: 'middle' },
      status: { refX: 16, refY: 39, fontSize: 11, fill: '#57606a', textAnchor: 'start', textVerticalAnchor: 'middle' },
      badge: { refX: NODE_W - 10, refY: 17, fontSize: 12, fontWeight: 'bold', fill: '#cf222e', textAnchor: 'end', textVerticalAnchor: 'middle' },
    },
    ports: {
      groups: {
        in: { position: 'top', attrs: { circle: { r: 6, magnet: 'passive', stroke: '#57606a', strokeWidth: 1.5, fill: '#fff' } } },
        out: { position: 'bottom', attrs: { circle: { r: 6, magnet: true, stroke: '#57606a', strokeWidth: 1.5, fill: '#d0d7de' } } },
      },
    },
  });

  function portItems(kind, nodeId, links) {
    const m = modules.get(kind);
    const items = [];
    const declared = new Set();
    for (const side of ['inputs', 'outputs']) {
      for (const p of (m ? m[side] : [])) {
        const group = side === 'inputs' ? 'in' : 'out';
        declared.add(`${group}:${p.name}`);
        items.push({ id: `${group}:${p.name}`, group,
          attrs: { circle: { title: `${p.label} (${p.type}${p.optional ? ', optional' : ''})`, 'data-type': p.type, 'data-port': p.name } } });
      }
    }
    // a link to a port the module does not declare (or an unknown module): keep it, drawn in red
    for (const l of links || []) {
      for (const [end, group] of [[l.from, 'out'], [l.to, 'in']]) {
        const id = `${group}:${end.port}`;
        if (end.node === nodeId && !declared.has(id)) {
          declared.add(id);
          items.push({ id, group, attrs: { circle: { title: `${end.port} (not declared by this module)`, stroke: '#cf222e', fill: '#ffebe9' } } });
        }
      }
    }
    return items;
  }

  // measuring text (X6's textWrap) costs more than the rest of a node's drawing: cut by length
  const shorten = (text) => (text.length > 26 ? `${text.slice(0, 25)}…` : text);

  const datasets = new Map((boot.datasets || []).map((d) => [d.id, d]));
  function nodeLabel(doc, m) {
    if (!m) return `${doc.kind} (unknown module)`;
    const ds = doc.kind === 'dataset' && doc.parameters ? datasets.get(doc.parameters.dataset) : null;
    return ds ? `${m.label}: ${ds.name}` : m.label;
  }

  function nodeMeta(doc, pos, links) {
    const m = modules.get(doc.kind);
    const { id, ...data } = doc;
    return {
      id, shape: 'pd-module', x: pos.x, y: pos.y, data,
      attrs: { label: { text: shorten(nodeLabel(doc, m)) }, body: { 'data-kind': doc.kind, title: m ? m.label : doc.kind } },
      ports: { items: portItems(doc.kind, id, links) },
    };
  }

  function edgeMeta(link) {
    return {
      id: link.id, shape: 'pd-link',
      source: { cell: link.from.node, port: `out:${link.from.port}` },
      target: { cell: link.to.node, port: `in:${link.to.port}` },
    };
  }

  X6.Graph.registerEdge('pd-link', {
    inherit: 'edge',
    zIndex: -1,
    connector: { name: 'smooth', args: { direction: 'V' } },
    attrs: { line: { stroke: '#57606a', strokeWidth: 1.5, targetMarker: { name: 'block', width: 8, height: 6 } } },
  }, true);

  // ------------------------------------------------------------------ graph

  const container = $('#canvas');
  const graph = new X6.Graph({
    container,
    autoResize: true,
    async: false,
    grid: { size: 10, visible: true },
    background: { color: '#f6f8fa' },
    panning: { enabled: true, eventTypes: ['rightMouseDown', 'mouseWheel'] },
    mousewheel: { enabled: true, modifiers: ['ctrl', 'meta'], zoomAtMousePosition: true, minScale: 0.1, maxScale: 3 },
    connecting: {
      connector: { name: 'smooth', args: { direction: 'V' } },
      anchor: 'center',
      connectionPoint: 'anchor',
      allowBlank: false, allowLoop: false, allowNode: false, allowEdge: false, allowMulti: 'withPort',
      highlight: true,
      snap: { radius: 24 },
      createEdge() { return this.createEdge({ shape: 'pd-link' }); },
      validateMagnet({ magnet }) { return (magnet.getAttribute('port') || '').startsWith('out:'); },
      validateConnection({ targetPort, sourcePort, sourceCell, targetCell }) {
        return !!targetPort && targetPort.startsWith('in:') && !!sourcePort && sourcePort.startsWith('out:') && sourceCell !== targetCell;
      },
      validateEdge({ edge }) {
        const why = refusal(edge);
        if (why) banner(why);
        return !why;
      },
    },
    highlighting: {
      magnetAvailable: { name: 'stroke', args: { padding: 3, attrs: { stroke: '#0969da', 'stroke-width': 2 } } },
      magnetAdsorbed: { name: 'stroke', args: { padding: 4, attrs: { stroke: '#1a7f37', 'stroke-width': 3 } } },
    },
  });
  const history = new X6.History({
    enabled: true,
    beforeAddCommand(event, args) { return !(args && args.options && args.options.ignoreHistory); },
  });
  // the UMD build leaves out the plugins' Graph.prototype shortcuts: call the plugins themselves
  const selection = new X6.Selection({ enabled: true, multiple: true, rubberband: true, movable: true, showNodeSelectionBox: true, pointerEvents: 'none' });
  const keyboard = new X6.Keyboard({ enabled: true });
  graph.use(history);
  graph.use(selection);
  graph.use(new X6.Snapline({ enabled: true }));
  graph.use(keyboard);
  const minimap = $('#minimap');

  function portType(node, portId) {
    const m = modules.get(node.getData().kind);
    if (!m) return null;
    const [group, name] = portId.split(/:(.*)/s);
    const p = (group === 'in' ? m.inputs : m.outputs).find((x) => x.name === name);
    return p || null;
  }

  function label(node) {
    const m = modules.get(node.getData().kind);
    return `${m ? m.label : node.getData().kind} (${node.id})`;
  }

  /** Why this new link may not be made, or '' when it may. */
  function refusal(edge) {
    const src = edge.getSourceCell();
    const dst = edge.getTargetCell();
    if (!src || !dst) return '';
    const out = portType(src, edge.getSourcePortId());
    const inp = portType(dst, edge.getTargetPortId());
    if (out && inp && !(out.type === inp.type || inp.type === 'AnyDirectory')) {
      return `Cannot connect ${label(src)} output "${out.label}" (${out.type}) to ${label(dst)} input "${inp.label}" (${inp.type}): ` +
        `the types differ; ${inp.label} accepts only ${inp.type}.`;
    }
    const fed = graph.getIncomingEdges(dst) || [];
    if (fed.some((e) => e !== edge && e.getTargetPortId() === edge.getTargetPortId())) {
      return `Input "${inp ? inp.label : edge.getTargetPortId()}" of ${label(dst)} is already connected: delete that link first.`;
    }
    if (reaches(dst, src)) {
      return `Cannot connect ${label(src)} to ${label(dst)}: the link would make a cycle (${label(dst)} already feeds ${label(src)}).`;
    }
    return '';
  }

  function reaches(from, to) {
    const seen = new Set();
    const stack = [from];
    while (stack.length) {
      const n = stack.pop();
      if (n === to) return true;
      if (seen.has(n.id)) continue;
      seen.add(n.id);
      for (const e of graph.getOutgoingEdges(n) || []) {
        const t = e.getTargetCell();
        if (t) stack.push(t);
      }
    }
    return false;
  }

  // ------------------------------------------------------------------ the document

  function nodeDoc(node) {
    const d = node.getData() || {};
    const doc = { id: node.id, kind: d.kind, parameters: { ...(d.parameters || {}) } };
    if (d.run_settings && Object.keys(d.run_settings).length) doc.run_settings = { ...d.run_settings };
    if (d.comment) doc.comment = d.comment;
    if (d.regenerate_output) doc.regenerate_output = true;
    return doc;
  }

  function toDraft() {
    const nodes = graph.getNodes();
    const layout = {};
    for (const n of nodes) {
      const p = n.getPosition();
      layout[n.id] = { x: Math.round(p.x), y: Math.round(p.y) };
    }
    const links = graph.getEdges().filter((e) => e.getSourcePortId() && e.getTargetPortId()).map((e) => ({
      id: e.id,
      from: { node: e.getSourceCellId(), port: e.getSourcePortId().replace(/^out:/, '') },
      to: { node: e.getTargetCellId(), port: e.getTargetPortId().replace(/^in:/, '') },
    }));
    return { ...state.extra, schema_version: 1, nodes: nodes.map(nodeDoc), links, layout };
  }

  function load(draft) {
    const layout = draft.layout || {};
    const missing = draft.nodes.filter((n) => !layout[n.id]);
    const auto = missing.length ? dagrePositions(draft.nodes, draft.links) : {};
    const cells = draft.nodes.map((n) => nodeMeta(n, layout[n.id] || auto[n.id], draft.links))
      .concat(draft.links.map(edgeMeta));
    history.disable();
    graph.fromJSON({ cells });
    history.enable();
    history.clean();
  }

  function newNodeId() {
    const taken = new Set(graph.getNodes().map((n) => n.id));
    let k = 1 + Math.max(0, ...Array.from(taken, (id) => (/^n(\d+)$/.test(id) ? Number(id.slice(1)) : 0)));
    while (taken.has(`n${k}`)) k += 1;
    return `n${k}`;
  }

  function newNodeDoc(kind, datasetId) {
    const m = modules.get(kind);
    const parameters = {};
    for (const p of m.params) if (p.default !== null && p.default !== undefined) parameters[p.name] = p.default;
    if (datasetId) parameters.dataset = Number(datasetId);
    return { id: newNodeId(), kind, parameters };
  }

  // ------------------------------------------------------------------ palette

  const dnd = new X6.Dnd({
    target: graph,
    scaled: false,
    getDropNode: (dragging) => {
      const d = dragging.getData();
      const doc = { ...newNodeDoc(d.kind), parameters: JSON.parse(JSON.stringify(d.parameters || {})) };
      return graph.createNode(nodeMeta(doc, { x: 0, y: 0 }, []));
    },
  });
  function paletteItem(item) {
    item.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      const doc = newNodeDoc(item.dataset.kind, item.dataset.dataset);
      dnd.start(graph.createNode(nodeMeta(doc, { x: 0, y: 0 }, [])), e);
    });
    item.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' && e.key !== ' ') return;
      e.preventDefault();
      addAtCentre(item.dataset.kind, item.dataset.dataset);
    });
  }
  $$('.palette-item').forEach(paletteItem);

  // uploading a dataset: XMLHttpRequest, for its upload progress events
  $('#upload-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const file = $('#upload-file').files[0];
    const status = $('#upload-status');
    const bar = $('#upload-progress');
    const max = Number(e.target.dataset.max);
    if (!file) { status.textContent = 'Choose an archive first.'; return; }
    if (file.size > max) {
      status.textContent = `${file.name} is ${(file.size / 2 ** 20).toFixed(1)} MB: larger than the upload limit of ${(max / 2 ** 20).toFixed(0)} MB. Nothing was uploaded.`;
      status.className = 'error';
      return;
    }
    const form = new FormData();
    form.append('file', file);
    form.append('name', file.name.replace(/\.(zip|tar|tgz|tar\.gz|tar\.bz2|tar\.xz)$/i, ''));
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/datasets');
    xhr.setRequestHeader('X-CSRFToken', csrf);
    bar.hidden = false;
    bar.value = 0;
    status.className = '';
    status.textContent = `Uploading ${file.name}…`;
    $('#upload').disabled = true;
    xhr.upload.onprogress = (p) => { if (p.lengthComputable) bar.value = Math.round((100 * p.loaded) / p.total); };
    xhr.onloadend = () => {
      $('#upload').disabled = false;
      let data = {};
      try { data = JSON.parse(xhr.responseText); } catch (err) { data = {}; }
      if (xhr.status === 201) {
        bar.value = 100;
        datasets.set(data.id, data);
        status.textContent = `Uploaded ${data.name}: drag it onto the canvas.`;
        const li = document.createElement('li');
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'palette-item';
        b.dataset.kind = 'dataset';
        b.dataset.dataset = data.id;
        b.title = `Dataset ${data.id}: ${data.name}`;
        b.textContent = data.name;
        li.append(b);
        $('#dataset-list').prepend(li);
        paletteItem(b);
        e.target.reset();
      } else {
        bar.hidden = true;
        status.className = 'error';
        status.textContent = `Not uploaded: ${data.error || (xhr.status ? `the server answered ${xhr.status}` : 'the server could not be reached')}.`;
      }
    };
    xhr.send(form);
  });

  function addAtCentre(kind, datasetId) {
    const area = graph.getGraphArea();
    const n = graph.getNodes().length;
    const x = area.x + area.width / 2 - NODE_W / 2 + (n % 5) * 20;
    const y = area.y + area.height / 3 + (n % 5) * 20;
    const node = graph.addNode(nodeMeta(newNodeDoc(kind, datasetId), { x, y }, []));
    selection.clean();
    selection.select(node);
    container.focus({ preventScroll: true });
  }

  graph.on('node:added', ({ node }) => {
    // a drop from the palette: select the new node so that its parameters show at once
    if (!loading) { selection.clean(); selection.select(node); }
  });

  $('#palette-search').addEventListener('input', (e) => {
    const q = e.target.value.trim().toLowerCase();
    let shown = 0;
    for (const cat of $$('.category')) {
      let inCat = 0;
      for (const li of $$('li', cat)) {
        const b = $('.palette-item', li);
        const m = modules.get(b.dataset.kind);
        const hit = !q || `${b.textContent} ${m.label} ${m.kind} ${m.category} ${m.description}`.toLowerCase().includes(q);
        li.hidden = !hit;
        if (hit) inCat += 1;
      }
      cat.hidden = inCat === 0;
      if (q && inCat) cat.open = true;
      shown += inCat;
    }
    $('#palette-empty').hidden = shown > 0;
  });

  // ------------------------------------------------------------------ editing commands

  function selectedNodes() { return selection.getSelectedCells().filter((c) => c.isNode()); }

  function copy() {
    const nodes = selectedNodes();
    if (!nodes.length) return;
    const ids = new Set(nodes.map((n) => n.id));
    state.clipboard = {
      nodes: nodes.map((n) => ({ doc: JSON.parse(JSON.stringify(nodeDoc(n))), pos: n.getPosition() })),
      links: graph.getEdges().filter((e) => ids.has(e.getSourceCellId()) && ids.has(e.getTargetCellId()))
        .map((e) => ({ from: e.getSourceCellId(), fromPort: e.getSourcePortId(), to: e.getTargetCellId(), toPort: e.getTargetPortId() })),
    };
    banner(`Copied ${nodes.length} module(s).`, { kind: 'info' });
  }

  function paste() {
    const clip = state.clipboard;
    if (!clip) return;
    const idMap = {};
    const added = [];
    graph.startBatch('paste');
    for (const { doc, pos } of clip.nodes) {
      const id = newNodeId();
      idMap[doc.id] = id;
      added.push(graph.addNode(nodeMeta({ ...JSON.parse(JSON.stringify(doc)), id }, { x: pos.x + 40, y: pos.y + 40 }, []), { silentSelect: true }));
    }
    for (const l of clip.links) {
      added.push(graph.addEdge({ shape: 'pd-link', source: { cell: idMap[l.from], port: l.fromPort }, target: { cell: idMap[l.to], port: l.toPort } }));
    }
    graph.stopBatch('paste');
    clip.nodes.forEach((n) => { n.pos = { x: n.pos.x + 40, y: n.pos.y + 40 }; });
    selection.clean();
    selection.select(added.filter((c) => c.isNode()));
  }

  function removeSelection() {
    const cells = selection.getSelectedCells();
    if (!cells.length) return;
    graph.startBatch('delete');
    graph.removeCells(cells);
    graph.stopBatch('delete');
  }

  function zoomBy(d) { graph.zoom(d, { minScale: 0.1, maxScale: 3 }); }
  function fit() { graph.zoomToFit({ padding: 40, maxScale: 1 }); }

  function dagrePositions(nodes, links) {
    const g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 60, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
    for (const l of links) if (g.hasNode(l.from.node) && g.hasNode(l.to.node)) g.setEdge(l.from.node, l.to.node);
    dagre.layout(g);
    const out = {};
    for (const id of g.nodes()) { const p = g.node(id); out[id] = { x: p.x - NODE_W / 2, y: p.y - NODE_H / 2 }; }
    return out;
  }

  function autoLayout() {
    const d = toDraft();
    const pos = dagrePositions(d.nodes, d.links);
    graph.startBatch('layout');
    for (const n of graph.getNodes()) n.position(pos[n.id].x, pos[n.id].y);
    graph.stopBatch('layout');
    fit();
  }

  function undo() { if (history.canUndo()) history.undo(); }
  function redo() { if (history.canRedo()) history.redo(); }
  function moveSelection(dx, dy) {
    const nodes = selectedNodes();
    if (!nodes.length) return false;
    graph.startBatch('move');
    nodes.forEach((n) => n.translate(dx, dy));
    graph.stopBatch('move');
    return false;
  }

  const keys = [
    [['delete', 'backspace'], removeSelection],
    [['ctrl+c', 'meta+c'], copy],
    [['ctrl+v', 'meta+v'], paste],
    [['ctrl+z', 'meta+z'], undo],
    [['ctrl+shift+z', 'meta+shift+z', 'ctrl+y', 'meta+y'], redo],
    [['ctrl+a', 'meta+a'], () => { selection.select(graph.getNodes()); return false; }],
    [['ctrl+=', 'meta+=', 'ctrl+plus'], () => { zoomBy(0.1); return false; }],
    [['ctrl+-', 'meta+-'], () => { zoomBy(-0.1); return false; }],
    [['ctrl+0', 'meta+0'], () => { fit(); return false; }],
    [['ctrl+s', 'meta+s'], () => { saveNow(); return false; }],
    [['left'], () => moveSelection(-10, 0)], [['right'], () => moveSelection(10, 0)],
    [['up'], () => moveSelection(0, -10)], [['down'], () => moveSelection(0, 10)],
    [['escape'], () => selection.clean()],
  ];
  for (const [combos, fn] of keys) keyboard.bindKey(combos, (e) => { if (e && e.preventDefault) e.preventDefault(); fn(); return false; });
  for (const ev of ['blank:mousedown', 'cell:mousedown']) graph.on(ev, () => container.focus({ preventScroll: true }));

  const buttons = { undo, redo, copy, paste, delete: removeSelection, 'zoom-in': () => zoomBy(0.1), 'zoom-out': () => zoomBy(-0.1), fit, 'auto-layout': autoLayout };
  for (const [id, fn] of Object.entries(buttons)) $(`#${id}`).addEventListener('click', fn);
  function updateButtons() {
    $('#undo').disabled = !history.canUndo();
    $('#redo').disabled = !history.canRedo();
    const any = selection.getSelectedCells().length > 0;
    $('#copy').disabled = !selectedNodes().length;
    $('#delete').disabled = !any;
    $('#paste').disabled = !state.clipboard;
  }
  graph.on('scale', ({ sx }) => { $('#zoom-level').textContent = `${Math.round(sx * 100)}%`; });

  // ------------------------------------------------------------------ right pane

  let paneNode = null;
  function showPane(node) {
    paneNode = node;
    if (!node) {
      $('#tab-module').innerHTML = '<p class="muted">Select a module on the canvas to see its parameters.</p>';
      return;
    }
    htmx.ajax('POST', paneUrl, { target: '#tab-module', swap: 'innerHTML', values: { node: JSON.stringify(nodeDoc(node)) } });
  }
  document.body.addEventListener('htmx:afterSwap', (e) => {
    if (e.detail.target.id === 'tab-module') markPaneProblems();
  });
  graph.on('selection:changed', () => {
    const nodes = selectedNodes();
    const node = nodes.length === 1 ? nodes[0] : null;
    if (node !== paneNode) showPane(node);
    if (node) { showTab(currentTab === 'runs' ? 'module' : currentTab); refreshRunTabs(); }
    updateButtons();
  });

  function paneValue(input) {
    const t = input.dataset.type;
    if (t === 'bool') return input.checked;
    if (t === 'int' || t === 'float') {
      if (input.value.trim() === '') return null;
      const v = Number(input.value);
      return Number.isNaN(v) ? input.value : v;
    }
    return input.value;
  }

  function onPaneEdit(e) {
    const form = e.target.closest('#node-form');
    if (!form || !paneNode || form.dataset.node !== paneNode.id) return;
    const input = e.target;
    const data = JSON.parse(JSON.stringify(paneNode.getData()));
    if (input.dataset.param) {
      data.parameters = { ...(data.parameters || {}), [input.dataset.param]: paneValue(input) };
    } else if (input.dataset.runSetting) {
      const v = input.value.trim() === '' ? null : Number(input.value);
      data.run_settings = { ...(data.run_settings || {}), [input.dataset.runSetting]: Number.isNaN(v) ? input.value : v };
    } else if (input.hasAttribute('data-comment')) {
      data.comment = input.value;
    } else if (input.hasAttribute('data-regenerate')) {
      data.regenerate_output = input.checked;
    } else {
      return;
    }
    paneNode.setData(data, { overwrite: true });
  }
  $('#tab-module').addEventListener('change', onPaneEdit);
  // Enter in a field must not send the form: edits are saved by autosave (no inline handler: CSP)
  $('#tab-module').addEventListener('submit', (e) => e.preventDefault());
  $('#tab-module').addEventListener('input', (e) => { if (e.target.type !== 'checkbox' && e.target.tagName !== 'SELECT') onPaneEdit(e); });

  function markPaneProblems() {
    const form = $('#node-form');
    if (!form) return;
    const mine = state.problems.filter((p) => p.node === form.dataset.node && p.param);
    for (const field of $$('.field', form)) {
      const name = field.dataset.field;
      const found = mine.filter((p) => p.param === name);
      const err = $(`#error-${CSS.escape(name)}`, form);
      err.textContent = found.map((p) => p.message).join(' ');
      field.classList.toggle('invalid', found.length > 0);
      const input = $('input, select, textarea', field);
      if (input) input.toggleAttribute('aria-invalid', found.length > 0);
    }
  }

  // ------------------------------------------------------------------ problems

  // Marking a port draws all its node's ports again; a link being dragged onto one of them then
  // vanishes on release (seen when an autosave answer lands mid-drag). So while a mouse button is
  // down on the canvas, the marks wait, and are drawn once it is released.
  let pointerDown = false;
  container.addEventListener('mousedown', () => { pointerDown = true; }, true);
  window.addEventListener('mouseup', () => { // capture: X6 may stop the event before it bubbles up
    if (!pointerDown) return;
    pointerDown = false;
    if (state.paintPending) setTimeout(paintProblems, 0); // after X6 has handled the release
  }, true);

  function paintProblems() {
    if (pointerDown) { state.paintPending = true; return; }
    state.paintPending = false;
    const byNode = new Map();
    const ports = new Map();
    const badLinks = new Set();
    for (const p of state.problems) {
      if (p.node) {
        if (!byNode.has(p.node)) byNode.set(p.node, []);
        byNode.get(p.node).push(p.text || p.message);
      }
      if (p.node && p.port) ports.set(`${p.node}|${p.port}`, p.message);
      if (p.link) badLinks.add(p.link);
    }
    const painted = state.painted || { nodes: new Set(), links: new Set() };
    graph.batchUpdate(() => {
      // only the nodes and links whose marks change: a 200-node pipeline opens without problems
      const touch = new Set([...painted.nodes, ...byNode.keys()]);
      for (const id of touch) {
        const n = graph.getCellById(id);
        if (!n || !n.isNode()) continue;
        const msgs = byNode.get(n.id) || [];
        n.attr({ body: { stroke: msgs.length ? '#cf222e' : '#8c959f', strokeWidth: msgs.length ? 2 : 1, 'data-problems': msgs.length || null,
          title: msgs.length ? msgs.join('\n') : (modules.get(n.getData().kind) || {}).label || n.getData().kind },
        badge: { text: msgs.length ? `⚠ ${msgs.length}` : '' } }, SILENT);
        for (const port of n.getPorts()) {
          const name = port.id.replace(/^(in|out):/, '');
          const bad = port.group === 'in' ? ports.get(`${n.id}|${name}`) : null;
          n.setPortProp(port.id, 'attrs/circle/stroke', bad ? '#cf222e' : '#57606a', SILENT);
          n.setPortProp(port.id, 'attrs/circle/data-problem', bad || null, SILENT);
        }
      }
      for (const id of new Set([...painted.links, ...badLinks])) {
        const e = graph.getCellById(id);
        if (e && e.isEdge()) e.attr('line/stroke', badLinks.has(e.id) ? '#cf222e' : '#57606a', SILENT);
      }
    }, SILENT);
    state.painted = { nodes: new Set(byNode.keys()), links: badLinks };
    const bar = $('#problems');
    bar.replaceChildren();
    if (!state.problems.length) {
      bar.textContent = graph.getNodes().length ? 'No problems: ready to submit.' : 'Drag modules from the palette onto the canvas.';
      bar.className = 'problems-bar ok';
    } else {
      bar.className = 'problems-bar bad';
      const head = document.createElement('strong');
      head.textContent = `${state.problems.length} problem(s): `;
      bar.append(head);
      const ul = document.createElement('ul');
      for (const p of state.problems) {
        const li = document.createElement('li');
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'link';
        b.textContent = p.text || p.message;
        b.addEventListener('click', () => {
          const n = p.node && graph.getCellById(p.node);
          if (n) { selection.clean(); selection.select(n); graph.centerCell(n); }
        });
        li.append(b);
        ul.append(li);
      }
      bar.append(ul);
    }
    markPaneProblems();
  }

  // ------------------------------------------------------------------ autosave

  function setSaveState(text, cls = '') {
    const el = $('#save-state');
    el.textContent = text;
    el.className = `save-state ${cls}`;
  }

  function scheduleSave() {
    if (state.conflict) return;
    state.dirty = true;
    setSaveState('Unsaved changes…', 'pending');
    clearTimeout(state.saveTimer);
    state.saveTimer = setTimeout(save, 600);
  }

  async function saveNow() { clearTimeout(state.saveTimer); if (state.dirty) await save(); }

  async function save() {
    if (state.conflict) return false;
    if (state.saving) { state.again = true; return state.savePromise; }
    state.saving = true;
    state.dirty = false;
    setSaveState('Saving…', 'pending');
    let ok = false;
    state.savePromise = (async () => {
      try {
        const r = await api('PUT', `/api/pipelines/${boot.id}`, { revision: state.revision, draft: toDraft() });
        if (r.status === 409) {
          state.conflict = true;
          setSaveState('Not saved: changed elsewhere', 'bad');
          banner(`${r.data.error} Your edits in this tab are not saved.`, { kind: 'conflict', actions: [['Reload the latest version', () => { window.onbeforeunload = null; location.reload(); }]] });
        } else if (r.ok) {
          state.revision = r.data.revision;
          state.problems = r.data.problems || [];
          paintProblems();
          setSaveState(`Saved · revision ${state.revision}`, 'ok');
          ok = true;
        } else {
          state.dirty = true;
          const detail = r.data && r.data.problems ? ` ${r.data.problems.map((p) => p.text).join('; ')}` : '';
          setSaveState('Not saved', 'bad');
          banner(`Not saved: ${(r.data && r.data.error) || `the server answered ${r.status}`}.${detail}`);
        }
      } catch (err) {
        state.dirty = true;
        setSaveState('Not saved: server unreachable, retrying…', 'bad');
        clearTimeout(state.saveTimer);
        state.saveTimer = setTimeout(save, 3000);
      } finally {
        state.saving = false;
      }
      if (state.again) { state.again = false; return save(); }
      return ok;
    })();
    return state.savePromise;
  }

  window.addEventListener('beforeunload', (e) => {
    if (state.dirty || state.saving) { e.preventDefault(); e.returnValue = ''; }
  });

  // ------------------------------------------------------------------ tabs

  let currentTab = 'module';
  function showTab(name) {
    currentTab = name;
    for (const b of $$('.tabs [role=tab]')) b.setAttribute('aria-selected', String(b.dataset.tab === name));
    for (const p of $$('.tab-panel')) p.hidden = p.id !== `tab-${name}`;
  }
  for (const b of $$('.tabs [role=tab]')) {
    b.addEventListener('click', () => { showTab(b.dataset.tab); refreshRunTabs(); });
  }

  // ------------------------------------------------------------------ runs

  const fmtDuration = (s) => (s === null || s === undefined ? '' : s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`);
  const statusOf = (run, id) => (run && run.nodes && run.nodes[id] ? run.nodes[id].status : null);

  function paintStatuses() {
    const run = state.run;
    graph.batchUpdate(() => {
      for (const n of graph.getNodes()) {
        const info = run && run.nodes ? run.nodes[n.id] : null;
        const st = info ? info.status : null;
        const text = st ? `${st.replace('_', ' ')}${info.duration != null ? ` · ${fmtDuration(info.duration)}` : ''}` : '';
        n.attr({ stripe: { fill: st ? STATUS_COLOURS[st] || '#d0d7de' : '#d0d7de' }, status: { text }, body: { 'data-status': st } }, SILENT);
      }
    }, SILENT);
  }

  async function listRuns() {
    const r = await api('GET', `/api/pipelines/${boot.id}/runs`);
    const panel = $('#tab-runs');
    if (!r.ok) return;
    if (!r.data.runs.length) { panel.innerHTML = '<p class="muted">No runs yet.</p>'; return; }
    const table = document.createElement('table');
    table.className = 'runs';
    table.innerHTML = '<thead><tr><th>Run</th><th>Status</th><th>Submitted</th><th>Duration</th></tr></thead>';
    const body = document.createElement('tbody');
    for (const run of r.data.runs) {
      const tr = document.createElement('tr');
      tr.dataset.run = run.id;
      if (state.run && state.run.id === run.id) tr.className = 'current';
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'link';
      b.textContent = `#${run.id}`;
      b.addEventListener('click', () => viewRun(run.id));
      const cells = [b, run.status, new Date(run.submitted_at).toLocaleString(), fmtDuration(run.duration)];
      for (const c of cells) {
        const td = document.createElement('td');
        if (c instanceof Node) td.append(c); else td.textContent = c;
        tr.append(td);
      }
      tr.children[1].className = `status-${run.status}`;
      body.append(tr);
    }
    table.append(body);
    panel.replaceChildren(table);
  }

  async function submit() {
    // aria-disabled, not disabled: a disabled button loses the focus, and a keyboard user who
    // pressed Enter on Submit would be sent back to the top of the page
    const btn = $('#submit');
    if (btn.getAttribute('aria-disabled') === 'true') return;
    btn.setAttribute('aria-disabled', 'true');
    try {
      clearTimeout(state.saveTimer);
      if (state.dirty || state.saving) await save();
      if (state.conflict) return;
      if (state.problems.length) {
        banner(`The pipeline cannot run: fix the ${state.problems.length} problem(s) listed below the canvas first.`);
        return;
      }
      const r = await api('POST', `/api/pipelines/${boot.id}/runs`, {});
      if (!r.ok) {
        if (r.data && r.data.problems) { state.problems = r.data.problems; paintProblems(); }
        banner(`Not submitted: ${(r.data && r.data.error) || r.status}`);
        return;
      }
      banner('');
      await viewRun(r.data.id, r.data);
      listRuns();
    } finally {
      btn.removeAttribute('aria-disabled');
    }
  }
  $('#submit').addEventListener('click', submit);

  // the link downloads the stored draft: save the last edits first, or the file would miss them
  const exportLink = $('#export');
  exportLink.addEventListener('click', async (e) => {
    if (!state.dirty && !state.saving) return;
    e.preventDefault();
    clearTimeout(state.saveTimer);
    const ok = await (state.dirty ? save() : state.savePromise);
    if (ok && !state.dirty) exportLink.click();
    else if (!state.conflict) banner('Not exported: the latest edits could not be saved.');
  });

  $('#cancel-run').addEventListener('click', async () => {
    if (!state.run) return;
    const r = await api('POST', `/api/runs/${state.run.id}/cancel`);
    if (r.ok) { state.run = r.data; paintStatuses(); runBanner(); } else banner(`Cannot cancel: ${(r.data && r.data.error) || r.status}`);
  });

  function runBanner(extra = '') {
    const run = state.run;
    const el = $('#run-banner');
    if (!run) { el.hidden = true; return; }
    const nodes = Object.values(run.nodes || {});
    const done = nodes.filter((n) => ['completed', 'reused', 'failed', 'cancelled', 'not_run'].includes(n.status)).length;
    el.hidden = false;
    el.className = `run-banner status-${run.status}`;
    el.textContent = `Run #${run.id}: ${run.status}${nodes.length ? ` · ${done}/${nodes.length} modules done` : ''}` +
      `${run.duration != null ? ` · ${fmtDuration(run.duration)}` : ''}${run.message ? ` · ${run.message}` : ''}${extra ? ` · ${extra}` : ''}`;
    el.dataset.status = run.status;
    $('#cancel-run').hidden = !!['completed', 'failed', 'cancelled'].includes(run.status);
  }

  // a node's statuses in the order they come; anything else (completed, failed, ...) is final
  const STATUS_STEP = { pending: 0, queued: 1, running: 2 };
  const step = (st) => (st in STATUS_STEP ? STATUS_STEP[st] : 3);

  async function refreshRun() {
    if (!state.run) return;
    const r = await api('GET', `/api/runs/${state.run.id}`);
    if (r.ok && state.run && r.data.id === state.run.id) {
      // an event that came while the answer was on its way is newer than the answer: keep it
      const known = state.run.nodes || {};
      for (const [id, info] of Object.entries(r.data.nodes || {})) {
        if (known[id] && step(known[id].status) > step(info.status)) r.data.nodes[id] = { ...info, ...known[id] };
      }
      state.run = r.data;
      paintStatuses();
      runBanner();
    }
  }

  function refreshSoon() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(refreshRun, 150);
  }

  async function viewRun(id, known) {
    closeSocket();
    state.metrics = {};
    state.lastEventId = 0;
    state.run = known || { id, nodes: {}, status: 'queued' };
    const url = new URL(location.href);
    url.searchParams.set('run', id);
    window.history.replaceState(null, '', url);
    await refreshRun();
    openSocket();
    refreshRunTabs();
    for (const tr of $$('#tab-runs tr[data-run]')) tr.classList.toggle('current', Number(tr.dataset.run) === id);
  }

  function closeSocket() {
    if (state.ws) { state.ws.onclose = null; state.ws.close(); state.ws = null; }
    clearTimeout(state.wsTimer);
  }

  function openSocket() {
    const run = state.run;
    if (!run) return;
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${proto}://${location.host}/ws/runs/${run.id}/?after=${state.lastEventId}`);
    state.ws = ws;
    ws.onopen = () => {
      if (!state.wsRetry) return;
      state.wsRetry = 0;
      refreshRun().then(() => {
        if (state.run && state.run.id === run.id) {
          banner(`Reconnected to the server: run #${run.id} is shown as it is now (${state.run.status}).`, { kind: 'info' });
        }
      });
    };
    ws.onmessage = (m) => onEvent(JSON.parse(m.data));
    ws.onclose = (e) => {
      state.ws = null;
      if (!state.run || state.run.id !== run.id) return;
      if (e.code === 4404) { banner(`Run #${run.id} is not yours or no longer exists.`); return; }
      if (['completed', 'failed', 'cancelled'].includes(state.run.status) && state.sawFinish) return;
      state.wsRetry += 1;
      const wait = Math.min(5000, 500 * state.wsRetry);
      banner(`Lost the connection to the server; reconnecting (attempt ${state.wsRetry})… The run goes on; its status catches up when the connection is back.`, { kind: 'warn' });
      state.wsTimer = setTimeout(openSocket, wait);
    };
  }

  const EVENT_STATUS = { node_started: 'running', node_finished: 'completed', node_failed: 'failed', node_cancelled: 'cancelled', node_reused: 'reused' };

  function onEvent(ev) {
    state.lastEventId = Math.max(state.lastEventId, ev.id);
    const run = state.run;
    if (!run) return;
    run.nodes = run.nodes || {};
    if (EVENT_STATUS[ev.type] && ev.node) {
      const info = run.nodes[ev.node] || (run.nodes[ev.node] = {});
      info.status = EVENT_STATUS[ev.type];
      if (ev.data && ev.data.duration != null) info.duration = ev.data.duration;
      if (ev.data && ev.data.error) info.error = ev.data.error;
      if (run.status === 'queued') run.status = 'running';
      paintStatuses();
      runBanner();
      // a node that ends lets the next ones be queued, and queueing sends no event: ask
      if (ev.type !== 'node_started') refreshSoon();
      if (paneNode && paneNode.id === ev.node) refreshRunTabs();
    } else if (ev.type === 'metric') {
      const byNode = state.metrics[ev.node] || (state.metrics[ev.node] = {});
      const series = byNode[ev.data.name] || (byNode[ev.data.name] = []);
      series.push({ x: ev.data.step ?? series.length, y: ev.data.value });
      if (paneNode && paneNode.id === ev.node && currentTab === 'metrics') drawMetrics();
    } else if (ev.type === 'run_finished') {
      state.sawFinish = true;
      refreshRun().then(() => { listRuns(); refreshRunTabs(); });
      closeSocket();
    } else if (ev.type === 'run_cancel_requested') {
      runBanner('cancelling…');
    }
  }

  // ------------------------------------------------------------------ outputs, logs, metrics, visualize

  function needRunAndNode(panel) {
    if (!state.run) { panel.innerHTML = '<p class="muted">Submit the pipeline, or pick a run in the Runs tab.</p>'; return null; }
    if (!paneNode) { panel.innerHTML = `<p class="muted">Run #${state.run.id}: select a module on the canvas.</p>`; return null; }
    if (!statusOf(state.run, paneNode.id)) { panel.innerHTML = `<p class="muted">${paneNode.id} is not part of run #${state.run.id}.</p>`; return null; }
    return { run: state.run, node: paneNode.id };
  }

  function refreshRunTabs() {
    clearTimeout(state.logTimer);
    if (currentTab === 'outputs') showOutputs();
    else if (currentTab === 'metrics') drawMetrics();
    else if (currentTab === 'visualize') showVisualize();
    else if (currentTab === 'runs') listRuns();
  }

  const el = (tag, attrs = {}, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) e.setAttribute(k, v);
    e.append(...children);
    return e;
  };

  async function showOutputs() {
    const panel = $('#tab-outputs');
    const sel = needRunAndNode(panel);
    if (!sel) return;
    const base = `/api/runs/${sel.run.id}/nodes/${encodeURIComponent(sel.node)}`;
    const r = await api('GET', `${base}/files`);
    if (!r.ok) { panel.textContent = (r.data && r.data.error) || `Cannot list the files (${r.status}).`; return; }
    const parts = [el('h3', {}, `${sel.node} in run #${sel.run.id}: ${r.data.status.replace('_', ' ')}`)];
    if (r.data.error) parts.push(el('div', { class: 'node-error', role: 'alert' }, el('strong', {}, 'Error'), el('pre', {}, r.data.error)));
    for (const [port, files] of Object.entries(r.data.outputs)) {
      const ul = el('ul', { class: 'files', 'data-port': port });
      for (const f of files) ul.append(el('li', {}, el('a', { href: `${base}/files/${encodeURIComponent(port)}/${f.path.split('/').map(encodeURIComponent).join('/')}`, download: '' }, f.path), ` (${f.size.toLocaleString()} bytes)`));
      if (!files.length) ul.append(el('li', { class: 'muted' }, 'no files'));
      parts.push(el('h4', {}, `Output: ${port}`), ul);
    }
    const logs = r.data.logs.map((f) => f.path);
    const select = el('select', { id: 'log-file', 'aria-label': 'Log file' });
    for (const name of logs) select.append(el('option', { value: name }, name));
    const pre = el('pre', { class: 'log', id: 'log-text', tabindex: '0' });
    parts.push(el('h4', {}, 'Logs'), logs.length ? select : el('p', { class: 'muted', id: 'no-log' }, 'No log yet.'), pre);
    const logLinks = el('ul', { class: 'files' });
    const logLink = (name) => el('li', {}, el('a', { href: `${base}/files/logs/${name.split('/').map(encodeURIComponent).join('/')}`, download: '' }, `download ${name}`));
    for (const name of logs) logLinks.append(logLink(name));
    parts.push(logLinks);
    panel.replaceChildren(...parts);
    const tail = { offset: 0, file: logs[0] };
    select.addEventListener('change', () => { tail.offset = 0; tail.file = select.value; pre.textContent = ''; clearTimeout(state.logTimer); pump(); });
    async function pump() {
      const q = new URLSearchParams({ offset: tail.offset });
      if (tail.file) q.set('file', tail.file);
      const lr = await api('GET', `${base}/log?${q}`);
      if (!lr.ok || !pre.isConnected || currentTab !== 'outputs' || !paneNode || paneNode.id !== sel.node) return;
      if (lr.data.text) {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent += lr.data.text;
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      tail.offset = lr.data.next_offset;
      if (!tail.file && lr.data.files.length) tail.file = lr.data.file;
      // a distributed node's ranks start their logs one after the other: list each as it comes
      const listed = new Set(Array.from(select.options, (o) => o.value));
      const fresh = lr.data.files.filter((name) => !listed.has(name));
      for (const name of fresh) { select.append(el('option', { value: name }, name)); logLinks.append(logLink(name)); }
      if (fresh.length && !select.isConnected) { const none = $('#no-log', panel); if (none) none.remove(); pre.before(select); }
      if (fresh.length) select.value = tail.file;
      const live = ['queued', 'pending', 'running'].includes(lr.data.status);
      if (live || lr.data.next_offset < lr.data.size) state.logTimer = setTimeout(pump, live ? 1000 : 50);
    }
    pump();
  }

  const charts = [];
  function drawMetrics() {
    const panel = $('#tab-metrics');
    for (const c of charts.splice(0)) c.destroy();
    const sel = needRunAndNode(panel);
    if (!sel) return;
    const series = state.metrics[sel.node] || {};
    const names = Object.keys(series);
    if (!names.length) { panel.innerHTML = `<p class="muted">${sel.node} reported no metrics${['running', 'queued'].includes(statusOf(sel.run, sel.node)) ? ' yet' : ''}.</p>`; return; }
    panel.replaceChildren();
    for (const name of names) {
      const canvas = el('canvas', { 'aria-label': `${name} by step`, 'data-metric': name });
      panel.append(el('h4', {}, name), el('div', { class: 'chart' }, canvas));
      charts.push(new Chart(canvas, {
        type: 'line',
        data: { datasets: [{ label: name, data: series[name], borderColor: '#0969da', pointRadius: 2 }] },
        options: { animation: false, parsing: false, scales: { x: { type: 'linear', title: { display: true, text: 'step' } } }, plugins: { legend: { display: false } } },
      }));
    }
  }

  function showVisualize() {
    const panel = $('#tab-visualize');
    const sel = needRunAndNode(panel);
    if (!sel) return;
    htmx.ajax('GET', `/runs/${sel.run.id}/nodes/${encodeURIComponent(sel.node)}/visualize`, { target: '#tab-visualize', swap: 'innerHTML' });
  }

  // ------------------------------------------------------------------ start

  // "ready" = every node drawn (X6 draws asynchronously, in animation frames)
  const rendered = new Promise((resolve) => {
    if (!boot.draft.nodes.length || !graph.options.async) resolve();
    else graph.once('render:done', resolve);
  });
  load(boot.draft);
  performance.mark('designer:loaded');
  loading = false;
  graph.on('history:change', () => { scheduleSave(); updateButtons(); });
  for (const ev of ['history:undo', 'history:redo']) {
    graph.on(ev, () => { if (paneNode) showPane(graph.getCellById(paneNode.id) ? paneNode : null); });
  }
  graph.on('cell:removed', ({ cell }) => { if (cell === paneNode) showPane(null); });
  paintProblems();
  updateButtons();
  if (graph.getNodes().length) fit();
  const wanted = Number(new URLSearchParams(location.search).get('run'));
  if (wanted) viewRun(wanted);
  listRuns();
  window.designer = { graph, history, toDraft, state, save: saveNow };
  performance.mark('designer:setup');
  rendered.then(() => {
    // the minimap draws plain boxes (no ports, no text): it is a map, not a second canvas
    class MapNodeView extends X6.NodeView {
      renderMarkup() { return this.renderJSONMarkup({ tagName: 'rect', selector: 'body' }); }
      renderPorts() {}
      update() { super.update({ body: { refWidth: '100%', refHeight: '100%', fill: '#8c959f' } }); }
    }
    const map = new X6.MiniMap({
      container: minimap, width: 200, height: 140, padding: 10,
      graphOptions: { async: false, createCellView: (cell) => (cell.isNode() ? MapNodeView : null) },
    });
    graph.use(map);
    // X6 pans when the map's viewport frame is dragged, and centres on a click outside it; but
    // when the whole pipeline is in view the frame covers the map, so a click (press and release
    // without moving) anywhere on the map centres the canvas on that spot
    let press = null;
    minimap.addEventListener('mousedown', (e) => { press = { x: e.clientX, y: e.clientY }; });
    minimap.addEventListener('click', (e) => {
      if (!press || Math.abs(e.clientX - press.x) + Math.abs(e.clientY - press.y) > 3) return;
      if (e.target.closest('.x6-widget-minimap-viewport-zoom')) return;
      const p = map.targetGraph.clientToLocal(e.clientX, e.clientY);
      graph.centerPoint(p.x, p.y);
    });
    // "ready to edit" = canvas and minimap drawn
    window.designer.readyAt = performance.now();
    document.documentElement.dataset.designerReady = 'true';
  });
})();
