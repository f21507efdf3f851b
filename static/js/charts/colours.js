/* Colours of the sweep and comparison charts (pure): one per run or trial, and a ramp from a
 * poor value (light) to a good one (dark). */

// Tableau 10: ten hues told apart by most readers, including most colour-blind readers
const RUNS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#79706e'];

/** The colour of the i-th run (or trial number i); the ten hues repeat after ten. */
export const runColour = (i) => RUNS[((i % RUNS.length) + RUNS.length) % RUNS.length];

// amber (poor) through teal and blue to a dark purple (best): darker at each step, and even the
// lightest end stays visible as a thin line on white (viridis' yellow end did not)
const RAMP = [[222, 143, 5], [33, 145, 140], [59, 82, 139], [68, 1, 84]];

/** The ramp's colour at t in [0, 1] (0: poorest, 1: best), as rgb(). */
export function ramp(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [RAMP[i], RAMP[i + 1]];
  return `rgb(${a.map((c, k) => Math.round(c + (b[k] - c) * f)).join(', ')})`;
}
