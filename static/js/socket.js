/* A run's live events over a websocket, resumed after the last event seen when the connection
 * comes back (the server keeps every event: storage is the truth). */
import { paths } from './api.js';
import { banner } from './messages.js';
import { EVENTS } from './runstate.js';

const GONE = 4404; // the server's close code: not the user's run, or no such run

/**
 * Watch run `runId`: onEvent(event) for each event; onReopened() once a lost connection is back;
 * isOver() tells whether the run has finished (then a closed connection is not reopened).
 * Returns {close}.
 */
export function watchRun(runId, { onEvent, onReopened, isOver }) {
  let ws = null;
  let timer = null;
  let retry = 0;
  let lastEventId = 0;
  let sawFinish = false;

  function open() {
    ws = new WebSocket(paths.socket(location, runId, lastEventId));
    ws.onopen = () => {
      if (!retry) return;
      retry = 0;
      onReopened();
    };
    ws.onmessage = (m) => {
      const ev = JSON.parse(m.data);
      lastEventId = Math.max(lastEventId, ev.id);
      if (ev.type === EVENTS.runFinished) sawFinish = true;
      onEvent(ev);
    };
    ws.onclose = (e) => {
      ws = null;
      if (e.code === GONE) { banner(`Run #${runId} is not yours or no longer exists.`); return; }
      if (isOver() && sawFinish) return;
      retry += 1;
      banner(`Lost the connection to the server; reconnecting (attempt ${retry})… The run goes on; its status catches up when the connection is back.`, { kind: 'warn' });
      timer = setTimeout(open, Math.min(5000, 500 * retry));
    };
  }

  function close() {
    if (ws) { ws.onclose = null; ws.close(); ws = null; }
    clearTimeout(timer);
  }

  open();
  return { close };
}
