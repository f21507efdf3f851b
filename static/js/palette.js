/* The palette: modules, datasets and registered models (mymodels.js) dragged onto the canvas (or
 * added with Enter), the search box; uploading a dataset archive is upload.js. */
import { $, $$, h } from './dom.js';
import { copyOf, newNodeDoc } from './document.js';
import { entryMatches } from './quickadd.js';
import { uploadForm } from './upload.js';

/** addAtCentre(kind, datasetId, parameters) adds a node in view (keyboard users). Returns {entry}: wire a new entry. */
export function palette(canvas, catalogue, addAtCentre) {
  const { graph } = canvas;
  const nodeIds = () => graph.getNodes().map((n) => n.id);
  const dnd = new X6.Dnd({
    target: graph,
    scaled: false,
    getDropNode: (dragging) => {
      const d = dragging.getData();
      const doc = { ...newNodeDoc(catalogue.modules.get(d.kind), nodeIds()), parameters: copyOf(d.parameters || {}) };
      return graph.createNode(canvas.meta(doc, { x: 0, y: 0 }));
    },
  });

  function entry(item) {
    item.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      const doc = newNodeDoc(catalogue.modules.get(item.dataset.kind), nodeIds(), item.dataset.dataset);
      Object.assign(doc.parameters, presetOf(item));
      dnd.start(graph.createNode(canvas.meta(doc, { x: 0, y: 0 })), e);
    });
    item.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' && e.key !== ' ') return;
      e.preventDefault();
      addAtCentre(item.dataset.kind, item.dataset.dataset, presetOf(item));
    });
  }
  $$('.palette-item').forEach(entry);
  $('#palette-search').addEventListener('input', (e) => search(catalogue.modules, e.target.value));
  uploadForm($('#upload-form'), (data) => {
    // the canvas names a version "digits v2" once its name has several, and a name kept to follow its latest
    for (const [key, d] of catalogue.datasets) {
      if (d.base === data.name && d.version && !/ v\d+$/.test(d.name)) catalogue.datasets.set(key, { ...d, name: `${d.base} v${d.version}` });
    }
    catalogue.datasets.set(data.id, { ...data, base: data.name, name: data.version > 1 ? `${data.name} v${data.version}` : data.name });
    catalogue.datasets.set(data.name, { id: data.name, name: `${data.name} (latest)` });
    // a name again is its next version: the palette lists each name once, as its latest version
    for (const old of $$('#dataset-list .palette-item')) if (old.textContent === data.name) old.closest('li').remove();
    const b = h('button', { type: 'button', class: 'palette-item', 'data-kind': 'dataset', 'data-dataset': data.id, title: `Dataset ${data.id}: ${data.name} version ${data.version}` }, data.name);
    $('#dataset-list').prepend(h('li', {}, b)); // newest first, as the server lists them
    entry(b);
  });
  return { entry };
}

/** The parameters a palette entry sets on the node it adds: a registered model's name (My models). */
const presetOf = (item) => (item.dataset.model ? { model: item.dataset.model } : {});

/** Show the palette entries whose label, kind, category or description has the query. */
function search(modules, query) {
  const q = query.trim().toLowerCase();
  let shown = 0;
  for (const cat of $$('.category')) {
    let inCat = 0;
    for (const li of $$('li', cat)) {
      const b = $('.palette-item', li);
      const hit = entryMatches(b.textContent, modules.get(b.dataset.kind), q);
      li.hidden = !hit;
      if (hit) inCat += 1;
    }
    cat.hidden = q !== '' && inCat === 0; // no query: every section, My datasets' upload form too
    if (q && inCat) cat.open = true;
    shown += inCat;
  }
  $('#palette-empty').hidden = shown > 0;
}
