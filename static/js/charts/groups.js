/* Which metrics share a chart (pure): a training and a validation figure of the same quantity
 * (training_loss and validation_loss; training_top1_accuracy and validation_top1_accuracy) are
 * read against each other, so they are drawn on one chart; any other metric has its own. */

// the prefixes that say which data a figure was measured on
const SPLIT = /^(train|training|val|valid|validation|test|eval)[_.\-/ ]/i;

/** The quantity a metric measures: its name without the split prefix ("loss", "top1_accuracy"). */
export const quantity = (name) => name.replace(SPLIT, '') || name;

/** "Top-1 accuracy", "Loss", "Images per second": a chart's title of a quantity. */
export function quantityTitle(q) {
  const words = q.replace(/[_.\-/]+/g, ' ').replace(/\btop ?(\d)/i, 'top-$1').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

// what a reader looks at first: the loss, then the accuracy, then the rest in the order they came
const rank = (q) => (/loss/i.test(q) ? 0 : /acc/i.test(q) ? 1 : 2);

/** names (in the order they came) -> [{quantity, title, names}], one per chart: loss, accuracy, the rest. */
export function chartGroups(names) {
  const groups = new Map();
  for (const name of names) {
    const q = quantity(name);
    if (!groups.has(q)) groups.set(q, { quantity: q, title: quantityTitle(q), names: [] });
    groups.get(q).names.push(name);
  }
  return [...groups.values()].sort((a, b) => rank(a.quantity) - rank(b.quantity));
}
