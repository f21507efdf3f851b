/* The pipeline's default compute target (the draft's top-level "compute_target", saved by
 * autosave like any edit): a select in the Module tab while no module is selected alone. A
 * module's own target is chosen in its Run settings (the pane the server renders). The targets
 * are those the workers joined, as the page was loaded (the Compute page lists them). */
import { h, muted } from './dom.js';

/**
 * The options of a target select: "" (the fallback: `anyLabel`), then each target with how many of
 * its workers are alive, then the current value if no worker joined it (shown as not found).
 * targets: [{name, live}]; current: the chosen name or ''.
 */
export function targetOptions(targets, current, anyLabel = 'Any worker') {
  const options = [{ value: '', label: anyLabel, selected: !current }];
  for (const t of targets) {
    options.push({ value: t.name, label: `${t.name} (${t.live || 'no'} live worker${t.live === 1 ? '' : 's'})`, selected: t.name === current });
  }
  if (current && !targets.some((t) => t.name === current)) {
    options.push({ value: current, label: `${current} (not found: no worker joined it)`, selected: true });
  }
  return options;
}

/** extra: the draft's fields besides its graph; targets: [{name, live}]; onChange() after a choice. */
export function computeTargetPanel(extra, targets, onChange) {
  function choose(value) {
    if (value) extra.compute_target = value; else delete extra.compute_target;
    onChange();
  }

  return {
    /** Add the section to the Module tab (no module selected). */
    show(panel) {
      const select = h('select', { id: 'pipeline-compute-target', onchange: (e) => choose(e.target.value) },
        targetOptions(targets, extra.compute_target || '').map((o) => h('option', { value: o.value, selected: o.selected }, o.label)));
      panel.append(h('section', { class: 'pipeline-compute', 'aria-labelledby': 'pc-title' },
        h('h2', { id: 'pc-title' }, 'Default compute target'),
        h('label', { for: 'pipeline-compute-target', class: 'visually-hidden' }, 'Default compute target'),
        select,
        muted('Where the modules run unless their Run settings choose another target. Workers join a target with WORKER_COMPUTE_TARGET (the Compute page lists them).')));
    },
  };
}
