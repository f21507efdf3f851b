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
import { banner } from './messages.js';
import { metricsTab } from './metrics.js';
import { outputsTab, showVisualize } from './outputs.js';
import { nodePane, tabs } from './pane.js';
import { palette } from './palette.js';
import { problemsView } from './problems.js';
import { runsView } from './runs.js';
import { autosave } from './save.js';
import { statusBook } from './statuses.js';

performance.mark('designer:start');
const boot = JSON.parse($('#designer-boot').textContent);
const book = statusBook(boot.statuses);
const catalogue = {
  modules: new Map(boot.modules.map((m) => [m.kind, m])),
  datasets: new Map((boot.datasets || []).map((d) => [d.id, d])),
};

const canvas = createCanvas($('#canvas'), catalogue, draftExtra(boot.draft), (why) => banner(why));
const { graph, history } = canvas;
const problems = problemsView(canvas, catalogue.modules, boot.problems || []);
const saver = autosave(boot.id, boot.revision, canvas.toDraft, (list) => problems.set(list));
const edits = editing(canvas, catalogue.modules, saver.saveNow);
palette(canvas, catalogue, edits.addAtCentre);

// the right pane: the run tabs follow the selected node and the run shown
const pane = nodePane(canvas, $('.designer').dataset.paneUrl, problems.markPane);
const tabBar = tabs(() => refreshRunTabs());
const runs = runsView(canvas, book, boot.id, {
  settle: saver.settle,
  problems,
  hooks: {
    tabs: () => refreshRunTabs(),
    node: (id) => { if (isPaneNode(id)) refreshRunTabs(); },
    metric: (id) => { if (isPaneNode(id) && tabBar.current() === 'metrics') metrics.show(); },
  },
});
const view = { run: runs.run, node: pane.node, tab: tabBar.current, metrics: runs.metrics };
const outputs = outputsTab(view, book);
const metrics = metricsTab(view, book);
const isPaneNode = (id) => !!pane.node() && pane.node().id === id;

function refreshRunTabs() {
  outputs.stop();
  const shown = { outputs: outputs.show, metrics: metrics.show, visualize: () => showVisualize(view), runs: runs.list }[tabBar.current()];
  if (shown) shown();
}

graph.on('selection:changed', () => {
  const nodes = canvas.selectedNodes();
  const node = nodes.length === 1 ? nodes[0] : null;
  if (node !== pane.node()) pane.show(node);
  if (node) { tabBar.show(tabBar.current() === 'runs' ? 'module' : tabBar.current()); refreshRunTabs(); }
  edits.updateButtons();
});

// "ready" = every node drawn (X6 draws asynchronously, in animation frames)
const rendered = new Promise((resolve) => {
  if (!boot.draft.nodes.length || !graph.options.async) resolve();
  else graph.once('render:done', resolve);
});
canvas.load(boot.draft);
performance.mark('designer:loaded');
// a drop from the palette: select the new node so that its parameters show at once
graph.on('node:added', ({ node }) => canvas.select(node));
graph.on('history:change', () => { saver.schedule(); edits.updateButtons(); });
problems.paint();
edits.updateButtons();
if (graph.getNodes().length) canvas.fit();
const wanted = Number(new URLSearchParams(location.search).get('run'));
if (wanted) runs.view(wanted);
runs.list();
window.designer = { graph, history, toDraft: canvas.toDraft, save: saver.saveNow };
performance.mark('designer:setup');
rendered.then(() => {
  addMinimap(graph, $('#minimap'));
  // "ready to edit" = canvas and minimap drawn
  window.designer.readyAt = performance.now();
  document.documentElement.dataset.designerReady = 'true';
});
