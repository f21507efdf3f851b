/* How the sweep and comparison pages write a value, and which of several is best (pure). */

/** A number as a person reads it: whole numbers as they are, others to 4 significant digits,
 * very small or very large ones in exponent form ("3.162e-4"). */
export function formatNumber(x) {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(3).replace(/\.?0+e/, 'e');
  return String(Number(x.toPrecision(4)));
}

/** Any parameter or metric value; '—' for none (a run without that node or metric). */
export function formatValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'string') return v === '' ? '""' : v;
  return JSON.stringify(v);
}

/** The indices holding the best number of `values` for `goal` ("maximize" | "minimize"):
 * none without a goal, with fewer than two numbers, or when every number is the same. */
export function bestIndices(values, goal) {
  if (goal !== 'maximize' && goal !== 'minimize') return [];
  const numbers = values.map((v, i) => [v, i]).filter(([v]) => typeof v === 'number' && Number.isFinite(v));
  if (numbers.length < 2) return [];
  const pick = goal === 'maximize' ? Math.max : Math.min;
  const best = pick(...numbers.map(([v]) => v));
  if (numbers.every(([v]) => v === best)) return [];
  return numbers.filter(([v]) => v === best).map(([, i]) => i);
}
