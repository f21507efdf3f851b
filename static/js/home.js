/* The pipelines page's runs list: Compare selected runs is offered once 2 to 10 runs are ticked,
 * Delete selected runs once one is; the note beside them says how many are ticked; durations. */
import { $, $$ } from './dom.js';
import { duration } from './format.js';

const MIN_COMPARE = 2;
const MAX_COMPARE = 10;

function update() {
  const ticked = $$('#recent-runs .pick:checked').length;
  const compare = $('#compare-runs');
  compare.disabled = ticked < MIN_COMPARE || ticked > MAX_COMPARE;
  compare.title = compare.disabled ? `Tick ${MIN_COMPARE} to ${MAX_COMPARE} runs to compare them` : '';
  $('#delete-runs').disabled = ticked === 0;
  $('#picked-note').textContent = ticked ? `${ticked} ticked${ticked > MAX_COMPARE ? `: at most ${MAX_COMPARE} can be compared` : ''}`
    : `tick ${MIN_COMPARE} to ${MAX_COMPARE} runs`;
}

// each run's duration written as the designer writes it ("4.2 s", "3 min 7 s")
for (const cell of $$('#recent-runs td.duration[data-seconds]')) {
  if (cell.dataset.seconds) cell.textContent = duration(Number(cell.dataset.seconds));
}

if ($('#recent-runs')) {
  $('#recent-runs').addEventListener('change', update);
  update();
}
