/* A chart's y scale (pure): a loss that falls from 360 to 0.05 drawn on a linear axis shows the
 * first epoch and a flat line after it, so a loss or an error (what falls by factors) whose
 * figures are all positive and span two decades or more is drawn on a log axis (the chart's y
 * title says so); anything else, an accuracy or a score included, on a linear one. */

/** Is a metric one that falls by factors, a loss or an error (its chart may take a log axis)? */
export const fallsByFactors = (name) => /loss|error/i.test(name);

export const SPREAD = 100; // max / min from which the log axis is used

/** series: [{points: [[x, y], ...], hidden?}] -> 'logarithmic' | 'linear' (hidden lines do not count) */
export function yScaleType(series) {
  const ys = series.filter((s) => !s.hidden).flatMap((s) => s.points.map(([, y]) => y)).filter((y) => Number.isFinite(y));
  if (ys.length < 2 || ys.some((y) => y <= 0)) return 'linear';
  return Math.max(...ys) / Math.min(...ys) >= SPREAD ? 'logarithmic' : 'linear';
}

/** A log axis's tick label: 1, 2 and 5 of each decade written short ("0.05", "200"); the rest unlabelled. */
export function logTick(value) {
  if (!(value > 0)) return '';
  const mantissa = value / 10 ** Math.floor(Math.log10(value) + 1e-9);
  return [1, 2, 5].some((k) => Math.abs(mantissa - k) < 1e-6) ? String(Number(value.toPrecision(3))) : '';
}
