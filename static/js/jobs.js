/* The Jobs page: each job's duration written as the designer writes it ("4.2 s", "3 min 7 s"), and
 * Compare selected runs offered once 2 to 10 runs are ticked (the note beside it says how many). */
import { $, $$ } from './dom.js';
import { duration } from './format.js';

for (const cell of $$('#jobs td.duration[data-seconds]')) {
  if (cell.dataset.seconds) cell.textContent = duration(Number(cell.dataset.seconds));
}

const compare = $('#compare-runs');
if (compare) {
  const min = Number(compare.dataset.min);
  const max = Number(compare.dataset.max);
  const update = () => {
    const ticked = $$('#jobs .pick:checked').length;
    compare.disabled = ticked < min || ticked > max;
    compare.title = compare.disabled ? `Tick ${min} to ${max} runs to compare them` : '';
    $('#picked-note').textContent = ticked
      ? `${ticked} ticked${ticked > max ? `: at most ${max} can be compared` : ''}`
      : `tick ${min} to ${max} runs`;
  };
  $('#jobs').addEventListener('change', update);
  update();
}
