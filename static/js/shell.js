/* The page shell, on every page (loaded by base.html before the page's own modules):
 * - the designer's side panes collapse: each toggle (aria-controls names its pane) hides or shows
 *   it, the canvas takes the width (X6 follows its container), the choice is kept in this browser;
 *   selecting a module does not show a hidden pane, a 'pane:show' event from inside it does;
 * - the minimap hides and shows; a narrow window (under 1280 px) starts with it hidden, unless the
 *   user showed it (the choice kept in this browser);
 * - Chart.js draws its text and grid lines in the colours of the colour scheme (charts/theme.js). */
import { themeCharts } from './charts/theme.js';
import { browserStorage, paneState } from './panestate.js';

const designer = document.querySelector('.designer');

/** One pane's toggle: its pane, its words, the class of .designer that gives the canvas the room. */
function paneToggle(button, store) {
  const pane = document.getElementById(button.getAttribute('aria-controls'));
  const what = button.getAttribute('aria-label').toLowerCase(); // "modules palette", "details pane"
  const text = button.querySelector('.toggle-text');
  // the arrow points the way the pane goes: « hides the palette to the left, » shows it again
  const arrow = button.querySelector('[aria-hidden]');
  const hideArrow = arrow.textContent;
  const showArrow = hideArrow === '«' ? '»' : '«';
  function apply(collapsed) {
    pane.hidden = collapsed;
    designer.classList.toggle(`${pane.id}-collapsed`, collapsed);
    button.setAttribute('aria-expanded', String(!collapsed));
    button.title = collapsed ? `Show the ${what}` : `Hide the ${what} (more room for the canvas)`;
    // collapsed, the toggle names its pane: the way back stays plain to see
    if (text) text.hidden = !collapsed;
    arrow.textContent = collapsed ? showArrow : hideArrow;
    if (!collapsed) delete button.dataset.news;
  }
  function set(collapsed) {
    store.set(pane.id, collapsed);
    apply(collapsed);
  }
  apply(store.collapsed(pane.id));
  button.addEventListener('click', () => set(!pane.hidden));
  // what the user asked to see in a hidden pane (a menu's "View log") shows it: a script sends
  // 'pane:show' from an element inside (el.dispatchEvent(new CustomEvent('pane:show', { bubbles: true })))
  pane.addEventListener('pane:show', () => { if (pane.hidden) set(false); });
  return { pane, button };
}

function collapsingPanes() {
  const store = paneState(browserStorage());
  const toggles = [...designer.querySelectorAll('.pane-toggle[aria-controls]')].map((b) => paneToggle(b, store));
  // a module selected while the details are hidden does not open them: its toggle shows a mark
  // (its form has come into the hidden pane) until the pane is shown again
  document.body.addEventListener('htmx:afterSwap', (e) => {
    for (const { pane, button } of toggles) {
      if (pane.hidden && pane.contains(e.detail.target)) button.dataset.news = '';
    }
  });
}

export const MAP_KEY = 'designer.minimap'; // 'shown' | 'hidden' once the user chose
const NARROW = 1280;

function minimapToggle(storage) {
  const button = document.getElementById('toggle-minimap');
  const map = document.getElementById('minimap');
  function apply(hidden) {
    map.hidden = hidden;
    button.setAttribute('aria-expanded', String(!hidden));
    button.textContent = hidden ? 'Show map' : 'Hide map';
    button.title = hidden ? 'Show the minimap of the pipeline' : 'Hide the minimap (more room for the canvas)';
    if (!hidden) map.dispatchEvent(new CustomEvent('minimap:shown'));
  }
  const chosen = storage.getItem(MAP_KEY);
  apply(chosen ? chosen === 'hidden' : window.innerWidth < NARROW);
  button.addEventListener('click', () => {
    try { storage.setItem(MAP_KEY, map.hidden ? 'shown' : 'hidden'); } catch { /* refused: this page only */ }
    apply(!map.hidden);
  });
}

if (designer) collapsingPanes();
if (designer && document.getElementById('toggle-minimap')) minimapToggle(browserStorage());
// Chart.js is a deferred script that may come after this module, and shell.css (which names the
// colours) after both: colour the charts once the page and its style sheets are in
const charts = () => themeCharts(window.Chart);
if (document.readyState === 'complete') charts();
else window.addEventListener('load', charts);
