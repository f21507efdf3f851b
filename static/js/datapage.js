/* The Data page's upload form: an archive over the upload limit is refused here, before its bytes
 * are sent, with the same words as the palette's; the name field shows the name it will get (the
 * archive's name without its extension) until one is typed. The form posts as it is otherwise.
 * A dataset's page: deleting a version is asked once more (the server still refuses one in use). */
import { $ } from './dom.js';
import { datasetName, uploadRefusal } from './format.js';

const form = $('#data-upload');
if (form) {
  const file = $('#data-file');
  const name = $('#data-name');
  const status = $('#data-upload-status');
  file.addEventListener('change', () => {
    if (file.files[0]) name.placeholder = datasetName(file.files[0].name);
  });
  form.addEventListener('submit', (e) => {
    const why = uploadRefusal(file.files[0], Number(form.dataset.max));
    if (why) {
      e.preventDefault();
      status.className = 'error';
      status.textContent = why;
      return;
    }
    if (!name.value.trim()) name.value = datasetName(file.files[0].name);
    status.className = '';
    status.textContent = `Uploading ${file.files[0].name}…`;
  });
}
for (const asked of document.querySelectorAll('form[data-confirm]')) {
  asked.addEventListener('submit', (e) => {
    if (!window.confirm(asked.dataset.confirm)) e.preventDefault();
  });
}
document.documentElement.dataset.dataPageReady = 'true';
