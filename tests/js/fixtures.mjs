// Boot data as the page gets it (designer/pipelines/runs/views.py), for the pure modules' tests.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// statuses.for_page() as the server sends it; read from the server itself when its Python is here
const COPY = {
  node: ['pending', 'queued', 'running', 'completed', 'failed', 'reused', 'cancelled', 'not_run'],
  run: ['queued', 'running', 'completed', 'failed', 'cancelled'],
  terminal: ['cancelled', 'completed', 'failed', 'not_run', 'reused'],
  succeeded: ['completed', 'reused'],
  run_finished: ['cancelled', 'completed', 'failed'],
  active: ['pending', 'queued', 'running'],
  event_status: { node_queued: 'queued', node_started: 'running', node_finished: 'completed', node_failed: 'failed', node_cancelled: 'cancelled', node_reused: 'reused' },
};

function fromServer() {
  const python = `${ROOT}.venv/bin/python`;
  if (!existsSync(python)) return null;
  const code = 'import json; from designer.engine import statuses; print(json.dumps(statuses.for_page()))';
  return JSON.parse(execFileSync(python, ['-c', code], { cwd: ROOT, encoding: 'utf8' }));
}

export const SERVER_STATUSES = fromServer();
export const STATUSES = SERVER_STATUSES || COPY;

const port = (name, type, extra = {}) => ({ name, label: name[0].toUpperCase() + name.slice(1), type, ...extra });

export const MODULES = new Map([
  ['source', { kind: 'source', label: 'Source', inputs: [], outputs: [port('images', 'ImageDirectory')],
    params: [{ name: 'value', default: 1 }, { name: 'note', default: null }] }],
  ['resize', { kind: 'resize', label: 'Resize', inputs: [port('images', 'ImageDirectory')], outputs: [port('images', 'ImageDirectory')], params: [] }],
  ['train', { kind: 'train', label: 'Train', inputs: [port('model', 'UntrainedModel'), port('data', 'ImageDirectory')], outputs: [port('model', 'Model')], params: [] }],
  ['zip', { kind: 'zip', label: 'Zip', inputs: [port('anything', 'AnyDirectory', { optional: true })], outputs: [], params: [] }],
  ['dataset', { kind: 'dataset', label: 'Dataset', inputs: [], outputs: [port('images', 'ImageDirectory')], params: [{ name: 'dataset', default: null }] }],
]);

export const link = (id, from, fromPort, to, toPort) => ({ id, from: { node: from, port: fromPort }, to: { node: to, port: toPort } });
