/* How the page writes durations, sizes, file names and a run's summary (pure). */
import { statusLabel } from './statuses.js';

const MB = 2 ** 20;

/** "4.2 s" under a minute, "3 min 7 s" above; '' for an unknown duration. */
export function duration(s) {
  if (s === null || s === undefined) return '';
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** The status line drawn on a node: "completed · 1.2 s", or '' when the run has no such node. */
export function nodeStatusText(info) {
  if (!info || !info.status) return '';
  return `${statusLabel(info.status)}${info.duration != null ? ` · ${duration(info.duration)}` : ''}`;
}

/** The run banner above the canvas. */
export function runSummary(run, book, extra = '') {
  const nodes = Object.values(run.nodes || {});
  const done = nodes.filter((n) => book.isTerminal(n.status)).length;
  return `Run #${run.id}: ${run.status}${nodes.length ? ` · ${done}/${nodes.length} modules done` : ''}`
    + `${run.duration != null ? ` · ${duration(run.duration)}` : ''}${run.message ? ` · ${run.message}` : ''}`
    + `${extra ? ` · ${extra}` : ''}`;
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

export const bytes = (n) => `${n.toLocaleString()} bytes`;

// a log longer than this shows its end only (a script may print millions of lines): the page
// stays responsive, and the whole file is one click away (download)
export const LOG_TAIL_BYTES = 512 * 1024;

/** Where to read a log of `size` bytes from when it is first shown: its last LOG_TAIL_BYTES. */
export const tailStart = (size) => Math.max(0, size - LOG_TAIL_BYTES);

/** `text` cut to its last `limit` characters, at a line start. */
export function keepTail(text, limit = 2 * LOG_TAIL_BYTES) {
  if (text.length <= limit) return text;
  const cut = text.indexOf('\n', text.length - limit);
  return cut < 0 ? text.slice(-limit) : text.slice(cut + 1);
}
