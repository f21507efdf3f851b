import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fitText, textWidth, wrapText } from '../../static/js/textfit.js';

test("widths are Arial's (X6's node font): 'Train PyTorch Model' at 13 px", () => {
  assert.equal(Math.round(textWidth('Train PyTorch Model', 13)), 121); // Chromium with Liberation Sans: 118.7 (kerning)
  assert.ok(textWidth('WWW', 10) > textWidth('iii', 10) * 3);
});

test('a text that does not fit is cut with an ellipsis, within the width', () => {
  assert.equal(fitText('short', 100, 10), 'short');
  const cut = fitText('a rather long dataset name indeed', 80, 10);
  assert.ok(cut.endsWith('…') && textWidth(cut, 10) <= 80 && cut.length > 10, cut);
  assert.equal(fitText('ab cd', 16, 10), 'a…');
});

test('names wrap at spaces into two lines, the second cut if need be', () => {
  assert.deepEqual(wrapText('Validation dataset', 55, 10), ['Validation', 'dataset']);
  assert.deepEqual(wrapText('Input', 55, 10), ['Input']);
  assert.deepEqual(wrapText('Scored dataset to compare', 86, 10), ['Scored dataset to', 'compare']);
  const [first, second] = wrapText('one two three four five six seven', 40, 10);
  assert.ok(textWidth(first, 10) <= 40 && second.endsWith('…') && textWidth(second, 10) <= 40);
  assert.deepEqual(wrapText('Supercalifragilistic', 40, 10).length, 1);
});
