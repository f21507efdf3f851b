/* Which side panes of the designer are collapsed, kept in the browser: a list of pane ids in one
 * storage entry (localStorage on the page). A storage that refuses (private mode, full) or holds
 * something unreadable counts as "none collapsed": the choice then lasts the page only. */
export const PANES_KEY = 'designer.collapsed-panes';

export function paneState(storage) {
  function read() {
    try {
      const ids = JSON.parse(storage.getItem(PANES_KEY) || '[]');
      return Array.isArray(ids) ? ids : [];
    } catch {
      return [];
    }
  }
  return {
    collapsed: (id) => read().includes(id),
    set(id, collapsed) {
      const ids = new Set(read());
      if (collapsed) ids.add(id);
      else ids.delete(id);
      try {
        storage.setItem(PANES_KEY, JSON.stringify([...ids]));
      } catch {
        // refused: kept for this page only
      }
    },
  };
}

/** localStorage, or a store that keeps nothing where the browser refuses access to it. */
export function browserStorage() {
  try {
    return window.localStorage;
  } catch {
    return { getItem: () => null, setItem: () => {} };
  }
}
