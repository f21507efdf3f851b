/* The designer page, started: palette, canvas (AntV X6), autosave, problems, runs watched live.
 *
 * Each module owns one concern and its own state; this file joins them. The vendor libraries
 * (X6, dagre, Chart.js, htmx) are classic scripts that run before this module, as globals.
 * The server is the judge of validity: every save answers with the pipeline's problems, which
 * are drawn on the nodes, ports and links. window.designer is what tests and benchmarks drive. */
import { $ } from './dom.js';
import { addMinimap, createCanvas } from './canvas.js';
import { draftExtra } from './document.js';
import { editing } from './editing.js';
import { banner, recheckBanner } from './messages.js';
import { renameInTopBar } from './rename.js';
import { metricsTab } from './metricstab.js';
import { myModels } from './mymodels.js';
import { outputsTab, showVisualize } from './outputs.js';
import { nodePane, tabs } from './pane.js';
import { bindingMenu } from './binding.js';
import { computeTargetPanel } from './computetarget.js';
import { contextMenu } from './contextmenu.js';
import { palette } from './palette.js';
import { paramsPanel, paramsStore } from './paramspanel.js';
import { problemsView } from './problems.js';
import { quickSearch } from './quicksearch.js';
import { runsView } from './runs.js';
import { openingRun } from './runstate.js';
import { routeAroundModules } from './crossings.js';
import { autosave } from './save.js';
import { shortcutsHelp } from './shortcuts.js';
import { statusBook } from './statusbook.js';
import { scriptArguments } from './sweepargs.js';
import { sweepDialog } from './sweepdialog.js';
import { moduleOf } from './rules.js';

performance.mark('designer:start');
const boot = JSON.parse($('#designer-boot').textContent);
const book = statusBook(boot.statuses);
const catalogue = {
  modules: Object.assign(new Map(boot.modules.map((m) => [m.kind, m])), {
    // a component's versions that are not the latest, for the nodes pinned to one (rules.moduleOf)
    earlier: new Map((boot.earlier_modules || []).map((m) => [`${m.kind}@${m.version}`, m])),
  }),
  datasets: new Map((boot.datasets || []).map((d) => [d.id, d])),
};

const extra = draftExtra(boot.draft); // name, parameters...: sent back with each save
// a refused link: said until dismissed or until the user's next change (a module added, moved or
// removed, a link made), which is about something else
let changes = 0;
const canvas = createCanvas($('#canvas'), catalogue, extra, (why) => { const at = changes; banner(why, { holds: () => changes === at }); });
const { graph, history } = canvas;
for (const event of ['node:added', 'node:removed', 'node:moved', 'edge:connected']) graph.on(event, () => { changes += 1; recheckBanner(); });
const problems = problemsView(canvas, catalogue.modules, boot.problems || []);
// the server's notes ("Imported ..."): over the canvas; one about problems goes with the last of them
for (const m of boot.messages || []) {
  const warn = m.level === 'warning' || m.level === 'error';
  banner(m.text, warn ? { kind: 'warn', holds: () => problems.list().length > 0 } : { kind: 'info' });
}
// the problems bar under the canvas grows with the problems (a module just dropped brings some).
// The view stays still (issue 42: it was re-centred on the selected module at each change of the
// bar, so the canvas jumped while you wired): only a module selected that the bar now covers, and
// that was in view before, is scrolled up, by what the bar covers of it and no more.
let canvasBox = $('#canvas').getBoundingClientRect();
function keepSelectedInView() {
  const r = $('#canvas').getBoundingClientRect();
  const before = canvasBox;
  canvasBox = r;
  const nodes = canvas.selectedNodes();
  if (nodes.length !== 1 || r.bottom >= before.bottom) return;
  const b = graph.localToClient(nodes[0].getBBox());
  const wasInView = b.y >= before.top && b.y + b.height <= before.bottom;
  const covered = b.y + b.height + 8 - r.bottom;
  if (wasInView && covered > 0) graph.translateBy(0, -Math.min(covered, Math.max(0, b.y - r.top - 8)));
}
const saver = autosave(boot.id, boot.revision, canvas.toDraft, (list) => { problems.set(list); paramsView.mark(); });
// once X6 has taken the canvas's new size (its own observer) too
new ResizeObserver(() => requestAnimationFrame(keepSelectedInView)).observe($('#canvas'));
const edits = editing(canvas, catalogue.modules, saver.saveNow);
renameInTopBar(saver);
const entries = palette(canvas, catalogue, edits.addAtCentre);
myModels(catalogue, entries.entry);

// the pipeline's parameters: edited in the Module tab while no module is selected, bound in a node's pane
const store = paramsStore(extra, () => saver.schedule());
const paramsView = paramsPanel(graph, store, problems.list);

// the right pane: the run tabs follow the selected node and the run shown
const targetView = computeTargetPanel(extra, boot.compute_targets || [], () => saver.schedule());
const pane = nodePane(canvas, $('.designer').dataset.paneUrl, problems.markPane, (panel) => { paramsView.show(panel); targetView.show(panel); });
bindingMenu(pane, store, catalogue.modules);
problems.onFixed((n) => { canvas.select(n); pane.show(n); });
problems.onParamProblem((name) => {
  canvas.select([]);
  $('#tab-module').dispatchEvent(new CustomEvent('pane:show', { bubbles: true })); // shown if it was hidden
  tabBar.show('module');
  pane.show(null);
  paramsView.reveal(name);
});
const tabBar = tabs(() => refreshRunTabs());
const runs = runsView(canvas, book, boot.id, {
  settle: saver.settle,
  problems,
  params: store.list,
  hooks: {
    tabs: () => refreshRunTabs(),
    node: (id) => { if (isPaneNode(id)) refreshRunTabs(); },
    metric: (id) => { if (isPaneNode(id) && tabBar.current() === 'metrics') metrics.show(); },
  },
});
// the metric names the pipeline's modules emit (a sweep's primary metric is one of them)
const metricNames = () => [...new Set(graph.getNodes().flatMap((n) => (moduleOf(catalogue.modules, n.getData()) || {}).metrics || []))];
// what a sweep may name: the pipeline's parameters, and the script arguments of its components (`--learning_rate`)
const sweepable = () => [...store.list(), ...scriptArguments(graph.getNodes().map((n) => n.getData()), catalogue.modules)];
const sweeps = sweepDialog({ pipelineId: boot.id, params: sweepable, metrics: metricNames, settle: saver.settle });
store.onChange(sweeps.updateButton);
const view = { run: runs.run, node: pane.node, tab: tabBar.current, metrics: runs.metrics };
const outputs = outputsTab(view, book, canvas.module, catalogue.datasets);
const metrics = metricsTab(view, book, catalogue.modules);
const isPaneNode = (id) => !!pane.node() && pane.node().id === id;

// quick search, the right-click menu, the "?" list of shortcuts
quickSearch(canvas, catalogue, edits);
contextMenu(canvas, catalogue, edits, (name) => { tabBar.show(name); refreshRunTabs(); });
shortcutsHelp($('#shortcuts'));

function refreshRunTabs() {
  outputs.stop();
  const shown = { outputs: outputs.show, metrics: metrics.show, visualize: () => showVisualize(view), runs: runs.list }[tabBar.current()];
  if (shown) shown();
}

graph.on('selection:changed', () => {
  const nodes = canvas.selectedNodes();
  const node = nodes.length === 1 ? nodes[0] : null;
  pane.follow(nodes); // one node: its form; several: how many; none: the pipeline's own settings
  if (node) { tabBar.show(tabBar.current() === 'runs' ? 'module' : tabBar.current()); refreshRunTabs(); }
  edits.updateButtons();
});

// "ready" = every node drawn (X6 draws asynchronously, in animation frames)
const rendered = new Promise((resolve) => {
  if (!boot.draft.nodes.length || !graph.options.async) resolve();
  else graph.once('render:done', resolve);
});
canvas.load(boot.draft);
routeAroundModules(graph);
performance.mark('designer:loaded');
// a drop from the palette: select the new node so that its parameters show at once
graph.on('node:added', ({ node, options }) => { if (!(options && options.silentSelect)) canvas.select(node); });
graph.on('history:change', () => { saver.schedule(); edits.updateButtons(); sweeps.updateButton(); });
problems.paint();
pane.show(null);
edits.updateButtons();
sweeps.updateButton(); // the components loaded may pass script arguments to sweep
if (graph.getNodes().length) canvas.fit();
const wanted = Number(new URLSearchParams(location.search).get('run'));
// the run asked for in the address, else the pipeline's most recent one, or its sweep's best trial (as if picked in the Runs tab)
// the run's banner lies over the canvas's top, and shows after the first fit: fitted again if it covers a module
function refitUnderBanner() {
  const b = $('#run-banner');
  if (b.hidden) return;
  const r = b.getBoundingClientRect();
  const covered = (n) => { const x = graph.localToClient(n.getBBox()); return x.y < r.bottom && x.y + x.height > r.top && x.x < r.right && x.x + x.width > r.left; };
  if (graph.getNodes().some(covered)) canvas.fit();
}
// and whenever it shows or grows after that (a run submitted, waiting for a worker; a failure's
// reason): one frame later, once what it says is laid out
new ResizeObserver(() => requestAnimationFrame(refitUnderBanner)).observe($('#run-banner'));
if (wanted) runs.view(wanted).then(refitUnderBanner);
runs.list().then((all) => { if (!wanted && all.length && !runs.run()) runs.view(openingRun(all).id).then(refitUnderBanner); });
window.designer = { graph, history, toDraft: canvas.toDraft, save: saver.saveNow };
performance.mark('designer:setup');
rendered.then(() => {
  addMinimap(graph, $('#minimap'));
  // "ready to edit" = canvas and minimap drawn
  window.designer.readyAt = performance.now();
  document.documentElement.dataset.designerReady = 'true';
});
