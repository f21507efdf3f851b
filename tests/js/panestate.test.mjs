import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PANES_KEY, paneState } from '../../static/js/panestate.js';

function memory(initial = {}) {
  const data = { ...initial };
  return { data, getItem: (k) => (k in data ? data[k] : null), setItem: (k, v) => { data[k] = String(v); } };
}

test('a pane collapsed stays collapsed for the next page, the other one not', () => {
  const store = memory();
  paneState(store).set('palette', true);
  const next = paneState(store);
  assert.equal(next.collapsed('palette'), true);
  assert.equal(next.collapsed('details-pane'), false);
  next.set('palette', false);
  assert.equal(paneState(store).collapsed('palette'), false);
  assert.deepEqual(JSON.parse(store.data[PANES_KEY]), []);
});

test('both panes are kept, each once', () => {
  const store = memory();
  const state = paneState(store);
  state.set('palette', true);
  state.set('details-pane', true);
  state.set('palette', true);
  assert.deepEqual(JSON.parse(store.data[PANES_KEY]).sort(), ['details-pane', 'palette']);
});

test('an unreadable entry or a refusing storage counts as none collapsed', () => {
  assert.equal(paneState(memory({ [PANES_KEY]: '{not json' })).collapsed('palette'), false);
  assert.equal(paneState(memory({ [PANES_KEY]: '"palette"' })).collapsed('palette'), false);
  const refusing = { getItem: () => { throw new Error('denied'); }, setItem: () => { throw new Error('full'); } };
  const state = paneState(refusing);
  state.set('palette', true);
  assert.equal(state.collapsed('palette'), false);
});
