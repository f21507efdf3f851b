/* Uploading a dataset archive from the palette (My datasets): a progress bar, and a result the user
 * sees wherever the palette is scrolled: the status line brought into view, the new dataset marked
 * in the list (a name uploaded again: its new version, in the place of the earlier one). No note
 * over the canvas: that is where the user drops the new dataset next. */
import { $, $$ } from './dom.js';
import { paths, upload } from './api.js';
import { datasetName, uploadRefusal } from './format.js';

/** Mark one entry of My datasets (or none) as the one the last upload is about, and show it. */
function mark(id) {
  for (const b of $$('#dataset-list .palette-item.highlight')) b.classList.remove('highlight');
  const item = id === undefined || id === null ? null : $(`#dataset-list .palette-item[data-dataset="${CSS.escape(String(id))}"]`);
  if (item) { item.classList.add('highlight'); item.scrollIntoView({ block: 'nearest' }); }
}

/** The form's status line: its text (an error or not), brought into view. */
function say(text, { error = false } = {}) {
  const status = $('#upload-status');
  status.className = error ? 'error' : '';
  status.replaceChildren(text);
  status.scrollIntoView({ block: 'nearest' });
}

/** Wire the upload form; added(dataset) once the server has a new one (it is put in the list). */
export function uploadForm(form, added) {
  async function send(file, name) {
    const bar = $('#upload-progress');
    const body = new FormData();
    body.append('file', file);
    body.append('name', name);
    bar.hidden = false;
    bar.value = 0;
    mark(null);
    say(`Uploading ${file.name}…`);
    $('#upload').disabled = true;
    const r = await upload(paths.datasets, body, (percent) => { bar.value = percent; });
    $('#upload').disabled = false;
    if (r.status === 201) {
      bar.value = 100;
      added(r.data);
      form.reset();
      mark(r.data.id);
      const which = r.data.version > 1 ? ` version ${r.data.version}` : '';
      say(`Uploaded ${r.data.name}${which} (dataset ${r.data.id}): first in My datasets, marked; drag it onto the canvas.`);
      return;
    }
    bar.hidden = true;
    const why = r.data.error || (r.status ? `the server answered ${r.status}` : 'the server could not be reached');
    say(`Not uploaded: ${why.replace(/\.$/, '')}.`, { error: true });
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const file = $('#upload-file').files[0];
    const why = uploadRefusal(file, Number(form.dataset.max));
    if (why) { mark(null); say(why, { error: !!file }); return; }
    send(file, datasetName(file.name));
  });
}
