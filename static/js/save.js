/* Autosave: every change is saved 600 ms after the last one, with the revision it was made on.
 * A save refused as stale (409: changed elsewhere) stops saving until the page is reloaded. */
import { $ } from './dom.js';
import { api, errorOf, paths } from './api.js';
import { banner, setSaveState } from './messages.js';

const DELAY_MS = 600;
const RETRY_MS = 3000;

/** toDraft() reads the canvas; onSaved(problems) gets the server's verdict on each save. */
export function autosave(pipelineId, revision, toDraft, onSaved) {
  const s = { revision, saving: false, again: false, dirty: false, conflict: false, timer: null, promise: null, name: null };

  function conflict(answer) {
    s.conflict = true;
    setSaveState('Not saved: changed elsewhere', 'bad');
    const reload = () => { window.onbeforeunload = null; location.reload(); };
    const error = String(answer.data.error); // the server's clause, as a sentence
    banner(`${error.charAt(0).toUpperCase()}${error.slice(1)} Your edits in this tab are not saved.`, { kind: 'conflict', actions: [['Reload the latest version', reload]] });
  }

  async function attempt() {
    let ok = false;
    const name = s.name; // a new name goes with the next save (one revision, one request at a time)
    try {
      const r = await api('PUT', paths.pipeline(pipelineId), name === null ? { revision: s.revision, draft: toDraft() }
        : { revision: s.revision, draft: toDraft(), name });
      if (name !== null && s.name === name && r.status !== 409 && r.status < 500) s.name = null; // taken, or refused with its reason
      if (r.status === 409) {
        conflict(r);
      } else if (r.ok) {
        s.revision = r.data.revision;
        s.savedName = r.data.name;
        onSaved(r.data.problems || []);
        setSaveState(`Saved · revision ${s.revision}`, 'ok');
        ok = true;
      } else if (name !== null && r.status < 500) {
        // the new name refused (the draft with it): said, and the draft saved again without it
        s.dirty = true;
        setSaveState('Unsaved changes…', 'pending');
        banner(`Not renamed: ${errorOf(r, `the server answered ${r.status}`)}.`);
        clearTimeout(s.timer);
        s.timer = setTimeout(save, DELAY_MS);
      } else {
        s.dirty = true;
        const detail = r.data && r.data.problems ? ` ${r.data.problems.map((p) => p.text).join('; ')}` : '';
        setSaveState('Not saved', 'bad');
        // goes by itself once a later save goes through (its answer's problems.set rechecks)
        banner(`Not saved: ${errorOf(r, `the server answered ${r.status}`)}.${detail}`, { holds: () => s.dirty });
      }
    } catch (err) {
      s.dirty = true;
      setSaveState('Not saved: server unreachable, retrying…', 'bad');
      clearTimeout(s.timer);
      s.timer = setTimeout(save, RETRY_MS);
    } finally {
      s.saving = false;
    }
    if (s.again) { s.again = false; return save(); }
    return ok;
  }

  /** Save now; a save asked for while one is on its way follows it. Answers whether it saved. */
  function save() {
    if (s.conflict) return Promise.resolve(false);
    if (s.saving) { s.again = true; return s.promise; }
    s.saving = true;
    s.dirty = false;
    setSaveState('Saving…', 'pending');
    s.promise = attempt();
    return s.promise;
  }

  function schedule() {
    if (s.conflict) return;
    s.dirty = true;
    setSaveState('Unsaved changes…', 'pending');
    clearTimeout(s.timer);
    s.timer = setTimeout(save, DELAY_MS);
  }

  /** Save what is not saved yet, and wait for a save on its way. */
  async function flush() {
    clearTimeout(s.timer);
    if (s.dirty || s.saving) return (s.dirty ? save() : s.promise);
    return true;
  }

  window.addEventListener('beforeunload', (e) => {
    if (s.dirty || s.saving) { e.preventDefault(); e.returnValue = ''; }
  });

  // the export link downloads the stored draft: save the last edits first, or the file would miss them
  const exportLink = $('#export');
  exportLink.addEventListener('click', async (e) => {
    if (!s.dirty && !s.saving) return;
    e.preventDefault();
    const ok = await flush();
    if (ok && !s.dirty) exportLink.click();
    else if (!s.conflict) banner('Not exported: the latest edits could not be saved.');
  });

  return {
    schedule,
    flush,
    /** Ctrl+S and window.designer.save(): save if anything changed. */
    async saveNow() { clearTimeout(s.timer); if (s.dirty) await save(); },
    /** Before a run is submitted: the last edits saved (a save on its way is followed by one more). */
    async settle() { clearTimeout(s.timer); if (s.dirty || s.saving) await save(); return !s.conflict; },
    get conflict() { return s.conflict; },
    /** A new name for the pipeline, saved with the draft; answers whether the server took it (if
     * not, the banner says why). */
    async rename(name) { s.name = name; s.dirty = true; clearTimeout(s.timer); await save(); return s.savedName === name; },
  };
}
