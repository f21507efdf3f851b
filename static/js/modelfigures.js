/* The figure a model is chosen by, in the Register dialog (issue 30: a new user registered the
 * latest run at 52% rather than the better one at 73%): this run's value of the node's main metric,
 * at the epoch whose model it kept, beside the best of the pipeline's recent runs. */
import { api, paths } from './api.js';
import { h } from './dom.js';
import { formatNumber } from './values.js';

/** The metric a model is judged by among a node's rows of /api/runs/compare: a validation figure
 * to maximise, else any to maximise, else any to minimise (a loss); null when none. */
function mainRow(rows) {
  const goal = (g) => rows.filter((r) => r.goal === g);
  const valid = goal('maximize').filter((r) => /valid/i.test(r.name));
  return valid.find((r) => /top1|accuracy/i.test(r.name)) || valid[0] || goal('maximize')[0] || goal('minimize')[0] || null;
}

/**
 * {metric, goal, mine: {run, value, step}, best: {run, value, step}} of `compare` (the answer of
 * /api/runs/compare) for node `nodeId` and run `runId`, or null when its node reported no metric
 * to judge by. A value is the kept epoch's where the node kept one, else the last.
 */
export function modelFigures(compare, runId, nodeId) {
  const row = mainRow(compare.metrics.filter((m) => m.node === nodeId));
  if (!row) return null;
  const at = (i) => ({ run: compare.runs[i].id, value: row.kept[i] ?? row.final[i], step: row.kept[i] != null ? row.kept_step[i] : null });
  const all = compare.runs.map((_, i) => at(i)).filter((x) => typeof x.value === 'number');
  const mine = all.find((x) => x.run === runId);
  if (!mine) return null;
  const sign = row.goal === 'minimize' ? -1 : 1;
  const best = all.reduce((a, b) => (sign * b.value > sign * a.value ? b : a));
  return { metric: row.name, goal: row.goal, mine, best };
}

/** The dialog's lines of `figures` (modelFigures); pipelineId: where a better run opens. */
export function figuresLine(figures, pipelineId) {
  const { metric, mine, best } = figures;
  const at = (x) => `${formatNumber(x.value)}${x.step != null ? ` (epoch ${x.step}, the model kept)` : ''}`;
  const lines = [h('p', { class: 'figure-mine' }, `${metric} of this model: ${at(mine)}.`)];
  if (best.run !== mine.run) {
    lines.push(h('p', { class: 'figure-better', role: 'note' }, `Run #${best.run} of this pipeline has a better one: ${at(best)}. `,
      h('a', { href: `/pipelines/${pipelineId}/?run=${best.run}` }, `Open run #${best.run}`), ' to register its model instead.'));
  } else {
    lines.push(h('p', { class: 'figure-best muted' }, 'The best of this pipeline\'s recent runs.'));
  }
  return lines;
}

/** The figures of run `runId`'s node among the pipeline's recent finished runs (up to 10), or []. */
export async function loadFigures(pipelineId, runId, nodeId, finished) {
  const listed = await api('GET', paths.runs(pipelineId));
  if (!listed.ok) return [];
  const ids = [runId, ...listed.data.runs.filter((r) => r.id !== runId && finished(r.status)).map((r) => r.id)].slice(0, 10);
  if (ids.length < 2) return [];
  const r = await api('GET', `/api/runs/compare?runs=${ids.join(',')}`);
  const figures = r.ok ? modelFigures(r.data, runId, nodeId) : null;
  return figures ? figuresLine(figures, pipelineId) : [];
}
