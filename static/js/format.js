/* How the page writes durations, sizes, file names and a run's summary (pure). */
import { statusLabel } from './statusbook.js';

const MB = 2 ** 20;

/** "4.2 s" under a minute, "3 min 7 s" above; '' for an unknown duration. */
export function duration(s) {
  if (s === null || s === undefined) return '';
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** The status line drawn on a node: "completed · 1.2 s", "reused · run #3" (it did no work: its
 * outputs are those of run #3), or '' when the run has no such node. */
export function nodeStatusText(info) {
  if (!info || !info.status) return '';
  if (info.reused_from_run != null) return `${statusLabel(info.status)} · run #${info.reused_from_run}`;
  return `${statusLabel(info.status)}${info.duration != null ? ` · ${duration(info.duration)}` : ''}`;
}

/** The line of an error that says what went wrong, cut to `max` characters: the last line that
 * names an exception (a traceback ends with it, below the script's output), else the first line. */
export const firstLine = (text, max = 160) => {
  const lines = String(text || '').split('\n').filter((l) => l.trim());
  const named = lines.filter((l) => /^\s*[\w.]*(Error|Exception|Interrupt|Exit)\b.*:/.test(l)).pop();
  const line = (named || lines[0] || '').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** The run banner above the canvas: the modules done (completed or reused), those that failed, were
 * cancelled or did not run, and the first that failed with its error (nameOf: a node id -> how
 * the page names it). A run none of whose modules has started yet reads "queued". */
export function runSummary(run, book, extra = '', nameOf = (id) => id) {
  const nodes = Object.values(run.nodes || {});
  const done = nodes.filter((n) => book.succeeded(n.status)).length;
  const unsuccessful = book.node.filter((s) => book.isTerminal(s) && !book.succeeded(s)); // failed, cancelled, not run
  const others = unsuccessful.map((s) => [s, nodes.filter((n) => n.status === s).length])
    .filter(([, count]) => count).map(([s, count]) => `${count} ${statusLabel(s)}`);
  const started = nodes.some((n) => n.status === book.running || book.isTerminal(n.status));
  // a finished run as every page says it ("early terminated": a trial its sweep's policy stopped)
  const status = run.status === book.running && !started ? 'queued' : (book.isRunFinished(run.status) && run.shown_status) || run.status;
  const reused = nodes.filter((n) => n.status === book.forEvent('node_reused')).length;
  const [failedId, failed] = Object.entries(run.nodes || {}).find(([, n]) => n.status === book.failed) || [];
  const why = failed ? `${nameOf(failedId)} failed${failed.error ? `: ${firstLine(failed.error)}` : ''}` : '';
  return [`Run #${run.id}: ${statusLabel(status)}`, nodes.length ? `${done}/${nodes.length} modules done${reused ? ` (${reused} reused)` : ''}` : '', ...others,
    run.duration != null ? duration(run.duration) : '', run.message, why, extra].filter(Boolean).join(' · ');
}

/** Why an archive is not uploaded, or '' when it may be. */
export function uploadRefusal(file, max) {
  if (!file) return 'Choose an archive first.';
  if (file.size > max) {
    return `${file.name} is ${(file.size / MB).toFixed(1)} MB: larger than the upload limit of ${(max / MB).toFixed(0)} MB. Nothing was uploaded.`;
  }
  return '';
}

/** A dataset's default name: its archive's name without the archive extension. */
export const datasetName = (fileName) => fileName.replace(/\.(zip|tar|tgz|tar\.gz|tar\.bz2|tar\.xz)$/i, '');

/** A relative path for a URL: each segment encoded, the slashes kept. */
export const urlPath = (path) => path.split('/').map(encodeURIComponent).join('/');

/** "2026-11-24 01:57:16" in the reader's time zone: how every page writes a moment (one width,
 * sorted as it reads, whatever the browser's locale). */
export function when(iso) {
  const d = new Date(iso);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export const bytes = (n) => `${n.toLocaleString()} bytes`;

// a log longer than this shows its end only (a script may print millions of lines): the page
// stays responsive, and the whole file is one click away (download)
export const LOG_TAIL_BYTES = 512 * 1024;

/** Where to read a log of `size` bytes from when it is first shown: its last LOG_TAIL_BYTES. */
export const tailStart = (size) => Math.max(0, size - LOG_TAIL_BYTES);

/** `text` cut to its last `limit` characters, at a line start. */
/** A log as a terminal shows it: a line a progress bar (tqdm) rewrote with carriage returns shows
 * its last state ("100%|####| 10/10"), not every state one after the other; "\r\n" ends a line. */
export function settleReturns(text) {
  if (!text.includes('\r')) return text;
  return text.split('\n').map((line) => {
    if (!line.includes('\r')) return line;
    const states = line.split('\r').filter((s) => s !== '');
    return states.length ? states[states.length - 1] : '';
  }).join('\n');
}

export function keepTail(text, limit = 2 * LOG_TAIL_BYTES) {
  if (text.length <= limit) return text;
  const cut = text.indexOf('\n', text.length - limit);
  return cut < 0 ? text.slice(-limit) : text.slice(cut + 1);
}

/** A server message cut into [text, isCode] parts: what it quotes in backticks (a command, a field)
 * is code. An unmatched backtick leaves the message as it is. */
export function codeParts(text) {
  const parts = String(text ?? '').split('`');
  if (parts.length % 2 === 0) return [[String(text), false]];
  return parts.map((p, i) => [p, i % 2 === 1]).filter(([p]) => p !== '');
}
