/* A run as the page knows it (pure): the server's answers merged with the socket's events, and
 * the metric series the events carry. */

/** The socket's event types besides the node ones (those are in the server's `event_status`). */
export const EVENTS = { metric: 'metric', runFinished: 'run_finished', cancelRequested: 'run_cancel_requested' };

/** A run before the server answered about it. */
export const unknownRun = (id, book) => ({ id, nodes: {}, status: book.newRun });

/**
 * The server's answer about a run, keeping any node an event moved further along meanwhile
 * (an event that came while the answer was on its way is newer than the answer).
 */
export function mergeRun(known, fresh, book) {
  const nodes = { ...(fresh.nodes || {}) };
  const mine = (known && known.nodes) || {};
  for (const [id, info] of Object.entries(nodes)) {
    if (mine[id] && book.step(mine[id].status) > book.step(info.status)) nodes[id] = { ...info, ...mine[id] };
  }
  return { ...fresh, nodes };
}

/** Apply a node event to the run in place; false for an event that changes no node's status. */
export function applyNodeEvent(run, ev, book) {
  const status = book.forEvent(ev.type);
  if (!status || !ev.node) return false;
  run.nodes = run.nodes || {};
  const info = run.nodes[ev.node] || (run.nodes[ev.node] = {});
  // a finished node is never taken back: an old run's events replay from its start once the
  // server's answer has already said how each node ended
  if (info.status && book.isTerminal(info.status) && book.step(status) < book.step(info.status)) return false;
  info.status = status;
  // when it started: the event's time until the server's answer says (the event was stored a moment later)
  if (status === book.running && ev.at && !info.started_at) info.started_at = ev.at;
  if (ev.data && ev.data.duration != null) info.duration = ev.data.duration;
  if (ev.data && ev.data.error) info.error = ev.data.error;
  if (run.status === book.newRun) run.status = book.running;
  return true;
}

/**
 * After a node event, whether the page asks the server for the whole run: 'now' when a node
 * failed or was cancelled (the nodes downstream end "not run", which no event names), 'later'
 * when one was queued (still queued a moment later, the run's answer says why: no worker, the
 * broker away...), else null: started, finished and reused events say all the page shows.
 */
export function askAfter(ev, book) {
  const status = book.forEvent(ev.type);
  if (!status) return null;
  if (book.isTerminal(status) && !book.succeeded(status)) return 'now';
  return status === book.queued ? 'later' : null;
}

/** Add a metric event's point to metrics[node][name] (a list of {x: step, y: value}). A step
 * logged again (a training that went on from its checkpoint after its worker or a process was
 * lost trains the steps after it once more) replaces the points from that step on. */
export function addMetric(metrics, ev) {
  const byNode = metrics[ev.node] || (metrics[ev.node] = {});
  const series = byNode[ev.data.name] || (byNode[ev.data.name] = []);
  const step = ev.data.step;
  if (step !== undefined && step !== null) {
    const again = series.findIndex((p) => p.x >= step);
    if (again >= 0) series.splice(again);
  }
  series.push({ x: step ?? series.length, y: ev.data.value });
  return series;
}

export const nodeStatus = (run, id) => (run && run.nodes && run.nodes[id] ? run.nodes[id].status : null);

/**
 * The run the designer opens on when its address names none (runs: the pipeline's, newest first):
 * the newest, unless that is a sweep's trial: then the trial its sweep named best, else the
 * newest run that is no trial, else the newest. (After a sweep, not whichever trial ended last.)
 */
export function openingRun(runs) {
  const [newest] = runs;
  if (!newest || !newest.trial) return newest || null;
  const sweep = newest.trial.sweep;
  return runs.find((r) => r.trial && r.trial.sweep === sweep && r.trial.best) || runs.find((r) => !r.trial) || newest;
}
