/* The sweep page's words and series (pure): the summary line, each trial's duration, the
 * primary metric per epoch of every trial, and where a trial's run is shown. */
import { runColour } from './charts/colours.js';
import { duration } from './format.js';
import { statusLabel } from './statusbook.js';

/** A sweep status that will not change any more (the server's list, boot data `statuses`). */
export function sweepFinished(sweep, statuses) {
  const over = statuses.sweep_finished || statuses.run_finished;
  return over.includes(sweep.status);
}

/** "random sampling · BanditPolicy · maximize validation_top1_accuracy · 3 of 8 trials finished · ..." */
export function summaryText(sweep, trialFinished) {
  const c = sweep.config || {};
  const over = new Set(trialFinished);
  const trials = sweep.trials || [];
  const done = trials.filter((t) => over.has(t.status)).length;
  const parts = [
    c.sampling && `${c.sampling} sampling`,
    c.policy && c.policy.type,
    sweep.primary_metric && `${sweep.primary_metric.goal} ${sweep.primary_metric.name}`,
    `${done} of ${c.max_total_runs || trials.length} trials finished`,
    c.max_concurrent_runs && `up to ${c.max_concurrent_runs} at a time`,
    sweep.duration != null && `took ${duration(sweep.duration)}`,
  ];
  return parts.filter(Boolean).join(' · ');
}

/** How long a trial took, or has run so far ("12.0 s so far"); '' before it started. */
export function trialDuration(trial, now = Date.now()) {
  if (trial.duration != null) return duration(trial.duration);
  if (trial.started_at && !trial.finished_at) return `${duration(Math.max(0, (now - Date.parse(trial.started_at)) / 1000))} so far`;
  return '';
}

/** A trial's status as written in the table: "early terminated". */
export const trialStatus = (trial) => statusLabel(trial.status);

/**
 * What happened beyond the status, when the server says (`detail`), without repeating the status:
 * "at epoch 2: the script stopped when asked" for a trial labelled "early terminated at epoch 2: ...".
 */
export function trialDetail(trial) {
  const detail = trial.detail || '';
  const status = statusLabel(trial.status);
  const said = detail.startsWith(status) ? detail.slice(status.length).trim() : detail;
  // its training did no work: its epochs, figures and time are those of an earlier run
  const reused = trial.reused_from_run != null ? `reused the training of run #${trial.reused_from_run}` : '';
  return [reused, said].filter(Boolean).join('; ');
}

/** The page of a trial's run: the designer showing that run, as the runs list links it. */
export function runHref(sweep, trial) {
  if (!trial.run) return null;
  return sweep.pipeline ? `/pipelines/${sweep.pipeline}/?run=${trial.run}` : null;
}

/** The primary metric per epoch of every trial that reported one, for lineChart(). */
export function curveSeries(sweep) {
  return (sweep.trials || []).filter((t) => (t.curve || []).length).map((t) => ({
    label: `Trial ${t.number}${t.best ? ' (best)' : ''}`,
    points: t.curve,
    colour: runColour(t.number),
    width: t.best ? 4 : 2,
    marked: t.kept_step || null, // the epoch whose model its training kept
  }));
}

/** The compare page for these run ids. */
export const compareHref = (runIds) => `/runs/compare?runs=${runIds.join(',')}`;
