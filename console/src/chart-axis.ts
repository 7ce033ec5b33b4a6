/** A round upper bound for a chart's axis: 1, 2 or 5 × 10^n at or above `max` (1 when nothing is above 0). */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}
