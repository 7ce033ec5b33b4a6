import type { ScheduleTiming } from './model.js';
import type { Timing } from './schemas.js';

/** source_config.timing → the stored schedule shape. */
export function toTiming(t: Timing): ScheduleTiming {
  const cron = t.cron === undefined ? [] : Array.isArray(t.cron) ? t.cron : [t.cron];
  const intervals =
    t.interval === undefined
      ? []
      : typeof t.interval === 'number'
        ? [{ everyS: t.interval, offsetS: 0 }]
        : [{ everyS: t.interval.every, offsetS: t.interval.offset ?? 0 }];
  return {
    cron,
    intervals,
    timezone: t.timezone,
    overlap: t.overlap,
    catchupWindowS: t.catchup_window,
    jitterS: t.jitter,
    startAt: t.start_at ? new Date(t.start_at).toISOString() : null,
    endAt: t.end_at ? new Date(t.end_at).toISOString() : null,
  };
}

/** The stored schedule shape back as source_config.timing (what reads show). */
export function fromTiming(t: ScheduleTiming): Record<string, unknown> {
  return {
    ...(t.cron.length ? { cron: t.cron.length === 1 ? t.cron[0] : t.cron } : {}),
    ...(t.intervals.length
      ? {
          interval: t.intervals[0].offsetS
            ? { every: t.intervals[0].everyS, offset: t.intervals[0].offsetS }
            : t.intervals[0].everyS,
        }
      : {}),
    timezone: t.timezone,
    overlap: t.overlap,
    catchup_window: t.catchupWindowS,
    jitter: t.jitterS,
    ...(t.startAt ? { start_at: t.startAt } : {}),
    ...(t.endAt ? { end_at: t.endAt } : {}),
  };
}
