/* The sweep page's trial table: number, sampled values, status, primary metric, epochs run,
 * duration and a link to its run; the best trial marked. Its check boxes pick runs to compare;
 * the choice is kept when the table is drawn again. */
import { h } from './dom.js';
import { runHref, trialDetail, trialDuration, trialStatus } from './trials.js';
import { formatValue } from './values.js';

/** table: the <table>; onPick(runIds) is told the runs picked after each change. */
export function trialTable(table, onPick) {
  const picked = new Set();

  function pickBox(trial) {
    if (!trial.run) return h('input', { type: 'checkbox', class: 'pick', disabled: true, 'aria-label': `Trial ${trial.number} has no run yet` });
    return h('input', {
      type: 'checkbox', class: 'pick', value: trial.run, checked: picked.has(trial.run),
      'aria-label': `Compare trial ${trial.number}`,
      onchange: (e) => {
        if (e.target.checked) picked.add(trial.run); else picked.delete(trial.run);
        onPick([...picked]);
      },
    });
  }

  function row(sweep, trial) {
    const href = runHref(sweep, trial);
    const runCell = !trial.run ? '' : href ? h('a', { href, class: 'run-link' }, `Run #${trial.run}`) : `Run #${trial.run}`;
    return h('tr', { 'data-trial': trial.number, 'data-status': trial.status, class: trial.best ? 'best' : null },
      h('td', {}, pickBox(trial)),
      h('td', { class: 'number' }, String(trial.number), trial.best ? h('span', { class: 'best-mark', title: 'the best trial' }, '★ best') : null),
      sweep.swept.map((name) => h('td', { class: 'num', 'data-param': name }, formatValue((trial.values || {})[name]))),
      h('td', { class: `status status-${trial.status}`, title: trial.detail || null }, trialStatus(trial),
        trialDetail(trial) ? h('span', { class: 'status-detail' }, trialDetail(trial)) : null),
      metricCell(sweep, trial),
      h('td', { class: 'num' }, String(trial.epochs ?? '')),
      h('td', { class: 'num duration' }, trialDuration(trial)),
      h('td', {}, runCell));
  }

  function metricCell(sweep, trial) {
    if (!trial.kept_step) return h('td', { class: 'num metric' }, formatValue(trial.value));
    const metric = sweep.primary_metric.name;
    const peak = trial.peak !== null && trial.peak !== trial.value ? `; its best ${metric} was ${formatValue(trial.peak)}` : '';
    return h('td', { class: 'num metric', title: `${metric} at epoch ${trial.kept_step}, the epoch whose model the training kept (its lowest validation loss)${peak}` },
      formatValue(trial.value), h('span', { class: 'kept' }, ` (epoch ${trial.kept_step})`));
  }

  function show(sweep) {
    const trials = sweep.trials || [];
    const withRun = new Set(trials.map((t) => t.run).filter(Boolean));
    for (const id of [...picked]) if (!withRun.has(id)) picked.delete(id);
    const metric = (sweep.primary_metric && sweep.primary_metric.name) || 'metric';
    const head = h('thead', {}, h('tr', {},
      h('th', {}, h('span', { class: 'visually-hidden' }, 'Compare')), h('th', {}, 'Trial'),
      sweep.swept.map((name) => h('th', { class: 'num' }, name)),
      h('th', {}, 'Status'), h('th', { class: 'num', title: `the trial's ${metric} at the epoch whose model it kept, when its training says (Train PyTorch Model), else its best` }, metric),
      h('th', { class: 'num' }, 'Epochs'), h('th', { class: 'num' }, 'Duration'), h('th', {}, 'Run')));
    // drawn again every few seconds: a check box that had the keyboard's focus gets it back
    const focused = table.contains(document.activeElement) && document.activeElement.closest('tr[data-trial]');
    table.replaceChildren(head, h('tbody', {}, trials.map((t) => row(sweep, t))));
    if (focused) {
      const again = table.querySelector(`tr[data-trial="${focused.dataset.trial}"] input.pick`);
      if (again) again.focus();
    }
    onPick([...picked]);
  }

  return { show, picked: () => [...picked] };
}
