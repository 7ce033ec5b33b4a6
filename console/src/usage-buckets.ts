/*
 * The time buckets of the usage page: the API answers one window per request (GET /v1/usage with
 * startDate and endDate, both inclusive), so a chart over time is one window per bucket. Pure.
 */

export type Range = '24h' | '7d' | '30d';

/** One bar of the chart over time (components/charts.tsx `Point`) and the window it sums. */
export interface Bucket {
  /** Short axis label (`14:00`, `03-07`). */
  label: string;
  /** Full name (`2026-03-07 14:00–15:00 UTC`). */
  title: string;
  value: number;
  /** startDate and endDate of the bucket's window (ISO 8601; a date alone is a whole UTC day). */
  start: string;
  end: string;
}

/** The windows the usage page offers, by name. */
export const RANGES: Record<Range, string> = { '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days' };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const pad = (n: number) => String(n).padStart(2, '0');
const day = (t: number) => new Date(t).toISOString().slice(0, 10);

/** The buckets of a range ending now: 24 UTC hours, or 7 or 30 UTC days (today included). */
export function bucketsOf(range: Range, now = Date.now()): Bucket[] {
  if (range === '24h') {
    const last = Math.floor(now / HOUR) * HOUR;
    return Array.from({ length: 24 }, (_, i) => {
      const s = last - (23 - i) * HOUR;
      const d = new Date(s);
      return {
        start: new Date(s).toISOString(),
        end: new Date(s + HOUR - 1).toISOString(),
        label: `${pad(d.getUTCHours())}:00`,
        title: `${day(s)} ${pad(d.getUTCHours())}:00–${pad((d.getUTCHours() + 1) % 24)}:00 UTC`,
        value: 0,
      };
    });
  }
  const n = range === '7d' ? 7 : 30;
  const today = Math.floor(now / DAY) * DAY;
  return Array.from({ length: n }, (_, i) => {
    const s = today - (n - 1 - i) * DAY;
    return { start: day(s), end: day(s), label: day(s).slice(5), title: `${day(s)} (UTC)`, value: 0 };
  });
}
