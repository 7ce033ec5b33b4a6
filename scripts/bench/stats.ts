/** The bench's statistics: medians and percentiles by nearest rank, and a bounded pool of async work. */

/** Median: the middle value (mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** 90th percentile by nearest rank: 9 in 10 samples are at or below it. */
function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)];
}

/** Percentile `q` (0–1) by nearest rank. */
export function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** Median and p90 of a series of milliseconds. */
export interface Spread {
  median: number;
  p90: number;
}
export const spread = (xs: number[]): Spread => ({ median: median(xs), p90: p90(xs) });

/** Runs `fn(0..count-1)` with at most `concurrency` in flight; rejects on the first failure. */
export async function pool(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}
