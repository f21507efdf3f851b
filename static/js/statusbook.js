/* Statuses as the server names them (boot data `statuses`, from designer/engine/statuses.py):
 * which are over, which are live, which a socket event sets. Only the colours live here. */

// presentation only: a node's stripe on the canvas; an unknown status gets the "no status" grey
const COLOURS = {
  pending: '#8c959f', queued: '#8c959f', running: '#0969da', completed: '#1a7f37', failed: '#cf222e',
  reused: '#8250df', cancelled: '#bc4c00', not_run: '#afb8c1',
};
export const NO_STATUS_COLOUR = '#d0d7de';

/** Helpers over the server's lists: `server` is the boot data's `statuses`. */
export function statusBook(server) {
  const terminal = new Set(server.terminal);
  const succeeded = new Set(server.succeeded);
  const finished = new Set(server.run_finished);
  const active = new Set(server.active);
  // the live statuses in the order a node goes through them (the server lists them so)
  const order = server.node.filter((s) => active.has(s));
  return {
    node: server.node,
    run: server.run,
    /** a run's status before the server first answered about it */
    newRun: server.run[0],
    /** the status of a node sent to the workers' queue */
    queued: server.event_status.node_queued,
    /** the status of a node (and of its run) once it started */
    running: server.event_status.node_started,
    /** the status of a node that failed */
    failed: server.event_status.node_failed,
    isTerminal: (s) => terminal.has(s),
    /** over with its outputs there (completed, or reused) */
    succeeded: (s) => succeeded.has(s),
    isRunFinished: (s) => finished.has(s),
    isActive: (s) => active.has(s),
    /** the node status a socket event sets, or null for an event that sets none */
    forEvent: (type) => (Object.hasOwn(server.event_status, type) ? server.event_status[type] : null),
    /** how far along a node is: the live statuses in order, then every final one */
    step: (s) => (order.includes(s) ? order.indexOf(s) : order.length),
    colour: (s) => (s && Object.hasOwn(COLOURS, s) ? COLOURS[s] : NO_STATUS_COLOUR),
    hasColour: (s) => Object.hasOwn(COLOURS, s),
  };
}

/** A status as the page writes it: "not run", not "not_run". */
export const statusLabel = (s) => String(s).replaceAll('_', ' ');
