/* The pipeline's name in the top bar: click it (or Enter on it) to rename the pipeline there;
 * Enter or leaving the box saves it with the draft (save.js rename), Escape keeps the old name. */
import { $, h } from './dom.js';

const MAX_NAME = 200; // drafts.MAX_NAME

export function renameInTopBar(saver) {
  const shown = $('#pipeline-name');
  shown.setAttribute('role', 'button');
  shown.setAttribute('tabindex', '0');
  shown.title = 'Rename the pipeline';

  function edit() {
    const old = shown.textContent;
    const input = h('input', { type: 'text', id: 'pipeline-name-input', class: 'pipeline-name-input', value: old,
      maxlength: String(MAX_NAME), 'aria-label': 'Pipeline name' });
    let done = false;
    async function finish(keep) {
      if (done) return;
      done = true;
      const name = input.value.trim();
      input.replaceWith(shown);
      if (keep || !name || name === old) { shown.focus(); return; }
      shown.textContent = name;
      const ok = await saver.rename(name);
      if (!ok) shown.textContent = old;
      document.title = `${shown.textContent} · Pipeline Designer`;
      shown.focus();
    }
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); finish(false); }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); finish(true); }
    });
    input.addEventListener('blur', () => finish(false));
    shown.replaceWith(input);
    input.select();
  }

  shown.addEventListener('click', edit);
  shown.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === 'F2') { e.preventDefault(); edit(); } });
}
