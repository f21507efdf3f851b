/* "My models" in the palette (the Registered model module's category, as "My datasets" is for
 * datasets): the user's registered models (GET /api/models) above the module's own entry,
 * each added as a "Registered model" node with its name set (the latest version unless the node's
 * pane says which). Read again when the Register dialog registers one. Such a node's label names
 * its model, on two lines if need be, and follows an edit in its pane (canvas.js, fitLabel). */
import { api } from './api.js';
import { $, h } from './dom.js';
import { REGISTERED, registryPaths } from './registry.js';

export const KIND = 'registered_model';

function item(m) {
  const versions = `${m.versions} version${m.versions === 1 ? '' : 's'}`;
  return h('li', {}, h('button', {
    type: 'button', class: 'palette-item model-item', 'data-kind': KIND, 'data-model': m.name,
    title: `Registered model ${m.name}: latest version ${m.latest_version}, ${versions} (drag onto the canvas, or press Enter to add)`,
  }, m.name, h('span', { class: 'item-note' }, ` v${m.latest_version}`)));
}

/** entry(button): the palette's wiring of an entry (drag and Enter). */
export function myModels(catalogue, entry) {
  const section = $('#my-models');
  const module = catalogue.modules.get(KIND);
  if (!section || !module) return; // the Registered model module is not in this catalogue

  async function load() {
    const r = await api('GET', registryPaths.models);
    const list = $('#model-list');
    if (!r.ok) { $('#models-note').textContent = `Your models could not be read (HTTP ${r.status}).`; return; }
    const items = r.data.models.filter((m) => m.latest_version !== null).map(item);
    list.replaceChildren(...items);
    items.forEach((li) => entry(li.firstChild));
    $('#models-note').textContent = items.length ? '' : 'No registered model yet: register one from a finished run (Outputs + logs of Train PyTorch Model).';
    section.dataset.loaded = String(Number(section.dataset.loaded || 0) + 1);
  }

  document.addEventListener(REGISTERED, load);
  load();
}
