import { createHash, randomUUID } from 'node:crypto';
import {
  ScheduleNotFoundError,
  isGrpcDeadlineError,
  type Client,
  type ScheduleOverlapPolicy,
  type ScheduleOptions,
  type ScheduleDescription,
  type ScheduleHandle,
} from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common';
import type { temporal as proto } from '@temporalio/proto';
import type { Config } from '../kernel/config.js';
import type { Receptor, ScheduleTiming } from './model.js';
import { validationError, workspaceShareExceeded } from '../kernel/errors.js';
import { createLimiter, shareOf } from '../kernel/limits.js';
import {
  BrainIdKey,
  JobKindKey,
  ReceptorIdKey,
  WorkspaceIdKey,
  type ReceptorFireInput,
} from '../temporal/definitions.js';

/** The Temporal Schedule of a scheduled receptor (one per receptor; visible in the Temporal UI under Schedules). */
const scheduleIdOf = (receptorId: string) => `receptor-${receptorId}`;
const receptorIdOf = (scheduleId: string) =>
  scheduleId.startsWith('receptor-') ? scheduleId.slice('receptor-'.length) : null;

const OVERLAP: Record<ScheduleTiming['overlap'], ScheduleOverlapPolicy> = {
  skip: 'SKIP',
  buffer_one: 'BUFFER_ONE',
  buffer_all: 'BUFFER_ALL',
  cancel_other: 'CANCEL_OTHER',
  allow_all: 'ALLOW_ALL',
};
const OVERLAP_BACK = Object.fromEntries(Object.entries(OVERLAP).map(([k, v]) => [v, k])) as Record<
  string,
  ScheduleTiming['overlap']
>;

type ListScheduleMatchingTimesResponse = proto.api.workflowservice.v1.IListScheduleMatchingTimesResponse;

/** What the receptor wants its schedule to be; the memo's hash lets the reconciler see drift. */
interface Desired {
  options: ScheduleOptions;
  hash: string;
  paused: boolean;
  note: string;
}

/** A Temporal error the client caused (a cron the server refuses): the caller's 400. */
function asInvalid(e: unknown, what: string): never {
  const err = e as { code?: number; message?: string; cause?: { code?: number; details?: string } };
  const code = err.code ?? err.cause?.code;
  // The client compiles cron strings itself and throws a TypeError for a malformed one.
  if (e instanceof TypeError) throw validationError(`${what}: ${err.message ?? 'invalid'}`);
  if (code === 3) throw validationError(`${what}: ${err.cause?.details ?? err.message ?? 'refused by the scheduler'}`);
  throw e;
}

/** The Temporal spec of a timing (one place, so a preview computes exactly what a saved schedule fires). */
const specOf = (t: ScheduleTiming) => ({
  cronExpressions: t.cron,
  intervals: t.intervals.map((i) => ({ every: i.everyS * 1000, offset: i.offsetS * 1000 })),
  timezone: t.timezone,
  jitter: t.jitterS * 1000,
  ...(t.startAt ? { startAt: new Date(t.startAt) } : {}),
  ...(t.endAt ? { endAt: new Date(t.endAt) } : {}),
});

/** What the schedule groups share: the Temporal client, the config and the handle of a receptor's schedule. */
interface ScheduleContext {
  temporal: Client;
  config: Config;
  handle: (receptorId: string) => ScheduleHandle;
}

/** The schedule a receptor's record asks for: Temporal's options, and the hash the reconciler compares. */
function desired(config: Config, r: Receptor): Desired {
  const t = r.timing!;
  const input: ReceptorFireInput = { workspaceId: r.workspaceId, receptorId: r._id, source: 'schedule' };
  const spec = specOf(t);
  const paused = !r.isActive || Boolean(r.schedulePause?.paused);
  const note = !r.isActive
    ? 'receptor inactive'
    : r.schedulePause?.paused
      ? (r.schedulePause.note ?? 'paused')
      : (r.schedulePause?.note ?? 'active');
  const hash = createHash('sha1')
    .update(JSON.stringify({ spec, o: t.overlap, c: t.catchupWindowS, input }))
    .digest('hex')
    .slice(0, 16);
  const attrs = [
    { key: WorkspaceIdKey, value: r.workspaceId },
    { key: ReceptorIdKey, value: r._id },
    { key: BrainIdKey, value: r.brainId },
  ];
  const options: ScheduleOptions = {
    scheduleId: scheduleIdOf(r._id),
    spec,
    action: {
      type: 'startWorkflow',
      workflowType: 'receptorFire',
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      // Temporal appends each fire's scheduled time to this id.
      workflowId: `receptor-fire-${r._id}`,
      args: [input],
      // The desired-state hash rides on the action (updatable, unlike the schedule's own memo).
      memo: { specHash: hash },
      typedSearchAttributes: [...attrs, { key: JobKindKey, value: 'receptor' }],
      staticSummary: `receptor ${r.slug}`,
    },
    policies: { overlap: OVERLAP[t.overlap], catchupWindow: Math.max(t.catchupWindowS, 10) * 1000 },
    state: { paused, note },
    memo: { receptorSlug: r.slug },
    typedSearchAttributes: attrs,
  };
  return { options, hash, paused, note };
}

/**
 * Receptor schedules on Temporal Schedules (docs/receptors.md, "Schedules"): each scheduled receptor owns the schedule
 * `receptor-<id>`, whose action starts `receptorFire`. Time zones and DST are the engine's; overlap,
 * catch-up window, jitter, pause, trigger-now and backfill are Temporal's own. The receptor record
 * is the desired state; `sync` makes the schedule match it and `reconcile` repairs drift.
 */
export function createScheduleService({ temporal, config }: { temporal: Client; config: Config }) {
  const ctx: ScheduleContext = {
    temporal,
    config,
    handle: (receptorId: string) => temporal.schedule.getHandle(scheduleIdOf(receptorId)),
  };
  const sync = createScheduleSync(ctx); // sync, remove, describe, scheduleIdOf
  const reads = createScheduleReads(ctx, sync); // matchingTimes, preview, view
  return {
    ...sync,
    ...createScheduleActions(ctx, { ...sync, matchingTimes: reads.matchingTimes }), // trigger, backfill, reconcile
    ...reads,
  };
}

/** Keeping one receptor's schedule as its record says: described, created, updated, paused, deleted. */
function createScheduleSync(ctx: ScheduleContext) {
  const { temporal, config, handle } = ctx;
  async function describe(receptorId: string): Promise<ScheduleDescription | null> {
    try {
      return await handle(receptorId).describe();
    } catch (e) {
      if (e instanceof ScheduleNotFoundError) return null;
      throw e;
    }
  }

  /** Makes the receptor's schedule match it: created, updated, paused or unpaused, or deleted when it has none. */
  async function sync(r: Receptor): Promise<void> {
    if (r.activation !== 'schedule' || !r.timing) return remove(r._id);
    const want = desired(config, r);
    const current = await describe(r._id);
    if (!current) {
      try {
        await temporal.schedule.create(want.options);
      } catch (e) {
        if ((e as { name?: string }).name === 'ScheduleAlreadyRunning') return sync(r);
        asInvalid(e, 'source_config.timing');
      }
      return;
    }
    if (current.action.memo?.specHash !== want.hash) {
      try {
        await handle(r._id).update((prev) => ({
          ...prev,
          spec: want.options.spec,
          action: want.options.action,
          policies: { ...prev.policies, ...want.options.policies },
          state: { ...prev.state, paused: want.paused, note: want.note },
        }));
      } catch (e) {
        asInvalid(e, 'source_config.timing');
      }
      return;
    }
    if (current.state.paused !== want.paused) {
      if (want.paused) await handle(r._id).pause(want.note);
      else await handle(r._id).unpause(want.note);
    }
  }

  async function remove(receptorId: string): Promise<void> {
    try {
      await handle(receptorId).delete();
    } catch (e) {
      if (e instanceof ScheduleNotFoundError) return;
      throw e;
    }
  }

  return { sync, remove, describe, scheduleIdOf };
}

/** Fire times: of a saved schedule, of a timing not saved yet (a preview), and the read-model view. */
function createScheduleReads(ctx: ScheduleContext, { describe }: Pick<ScheduleSync, 'describe'>) {
  const { temporal, config } = ctx;
  /**
   * A schedule's fire times in a range, computed by the server. Temporal answers it by querying the
   * schedule's own workflow, which on a loaded server can miss its query deadline (a schedule just
   * created has not run its first task yet): the question is asked again twice before it fails, so a
   * busy moment does not turn into an empty or failed preview. Only that failure is retried here: the
   * connection's own retry interceptor already retries UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED,
   * and leaves DEADLINE_EXCEEDED to the caller.
   */
  async function matching(scheduleId: string, start: Date, end: Date, max: number): Promise<Date[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res: ListScheduleMatchingTimesResponse = await temporal.workflowService.listScheduleMatchingTimes({
          namespace: config.TEMPORAL_NAMESPACE,
          scheduleId,
          startTime: msToTs(start.getTime()),
          endTime: msToTs(end.getTime()),
        });
        return (res.startTime ?? []).slice(0, max).map((t) => new Date(tsToMs(t)));
      } catch (e) {
        if (attempt >= MATCHING_ATTEMPTS || !isGrpcDeadlineError(e)) throw e;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }

  /** One preview as Temporal computes it (see `preview`): a paused throw-away schedule, asked and deleted. */
  async function previewNow(workspaceId: string, t: ScheduleTiming, count: number): Promise<Date[]> {
    const scheduleId = `${PREVIEW_PREFIX}${Date.now()}-${randomUUID()}`;
    const input: ReceptorFireInput = { workspaceId, receptorId: scheduleId, source: 'schedule' };
    try {
      await temporal.schedule.create({
        scheduleId,
        spec: specOf({ ...t, jitterS: 0 }),
        action: {
          type: 'startWorkflow',
          workflowType: 'receptorFire',
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowId: `receptor-preview-fire-${scheduleId}`,
          args: [input],
        },
        policies: { overlap: 'SKIP' },
        state: { paused: true, note: 'preview: never fires, deleted at once' },
      });
    } catch (e) {
      asInvalid(e, 'timing');
    }
    try {
      const now = new Date();
      return await matching(scheduleId, now, new Date(now.getTime() + 2 * 365 * 86400_000), count);
    } finally {
      await temporal.schedule
        .getHandle(scheduleId)
        .delete()
        .catch(() => undefined);
    }
  }

  return {
    /** The spec's fire times in a range, computed by the server (time zone and DST included). */
    matchingTimes: (receptorId: string, start: Date, end: Date, max: number): Promise<Date[]> =>
      matching(scheduleIdOf(receptorId), start, end, max),

    /**
     * The next fire times of a timing that is not saved, computed by Temporal itself so that they are
     * exactly what the saved schedule would fire (cron dialect, time zone and DST, intervals and their
     * offset, start and end). Temporal computes matching times only for a schedule, so the preview
     * creates a paused schedule `receptor-preview-<epoch ms>-<uuid>` (its action never runs), asks it
     * and deletes it; one left behind by a crash has no receptor, so the reconciler removes it once
     * it is ten minutes old (a younger one is a preview under way). A spec Temporal
     * refuses is the caller's 400, as on save.
     */
    async preview(workspaceId: string, t: ScheduleTiming, count: number): Promise<Date[]> {
      // Each preview costs Temporal three calls: the same timing asked again within PREVIEW_CACHE_MS
      // is answered from the last answer (a form asks on every keystroke), a workspace has at most
      // its share of the previews under way in this process (429 past it), and the process at most
      // PREVIEW_MAX_AT_ONCE, the rest waiting in turn.
      const key = JSON.stringify([t, count]);
      const now = Date.now();
      for (const [k, c] of previewCache) if (c.at < now - PREVIEW_CACHE_MS) previewCache.delete(k);
      const cached = previewCache.get(key);
      if (cached) {
        const ahead = cached.times.filter((d) => d.getTime() > now);
        if (ahead.length >= Math.min(count, cached.times.length)) return ahead.slice(0, count);
      }
      const mine = previewsOf.get(workspaceId) ?? 0;
      if (mine >= PREVIEW_WORKSPACE_SHARE)
        throw workspaceShareExceeded(`The workspace has ${mine} schedule previews under way; retry in a moment`);
      previewsOf.set(workspaceId, mine + 1);
      try {
        const times = await previewLimiter.run(() => previewNow(workspaceId, t, count + PREVIEW_SPARE));
        if (previewCache.size >= PREVIEW_CACHE_MAX) previewCache.delete(previewCache.keys().next().value!);
        previewCache.set(key, { at: Date.now(), times });
        return times.slice(0, count);
      } finally {
        const left = (previewsOf.get(workspaceId) ?? 1) - 1;
        if (left > 0) previewsOf.set(workspaceId, left);
        else previewsOf.delete(workspaceId);
      }
    },

    /** The read-model view: state, note, next N fire times (up to two years ahead), recent fires and counters. */
    async view(r: Receptor, preview: number) {
      const d = await describe(r._id);
      const t = r.timing!;
      const base = {
        schedule_id: scheduleIdOf(r._id),
        timezone: t.timezone,
        cron: t.cron,
        interval_seconds: t.intervals.map((i) => i.everyS),
        overlap: t.overlap,
      };
      if (!d)
        return {
          ...base,
          state: 'missing' as const,
          note: null,
          next_fire_times: [],
          recent_fires: [],
          fires_taken: 0,
          skipped_overlap: 0,
          missed_catchup: 0,
        };
      let next: Date[] = [];
      if (preview > 0) {
        const now = new Date();
        next = await this.matchingTimes(r._id, now, new Date(now.getTime() + 2 * 365 * 86400_000), preview).catch(() =>
          d.info.nextActionTimes.slice(0, preview),
        );
      }
      return {
        ...base,
        overlap: (d.policies.overlap && OVERLAP_BACK[d.policies.overlap]) || t.overlap,
        state: d.state.paused ? ('paused' as const) : ('active' as const),
        note: d.state.note ?? null,
        next_fire_times: next.map((x) => x.toISOString()),
        recent_fires: d.info.recentActions.slice(-10).map((a) => ({
          scheduled_at: a.scheduledAt.toISOString(),
          started_at: a.takenAt.toISOString(),
          workflow_id: a.action.workflow.workflowId,
        })),
        fires_taken: d.info.numActionsTaken,
        skipped_overlap: d.info.numActionsSkippedOverlap,
        missed_catchup: d.info.numActionsMissedCatchupWindow,
      };
    },
  };
}

/** What is asked of saved schedules: a fire now, a backfill, the repair of drift. */
function createScheduleActions(
  ctx: ScheduleContext,
  steps: ScheduleSync & Pick<ReturnType<typeof createScheduleReads>, 'matchingTimes'>,
) {
  const { temporal, handle } = ctx;
  const { sync, remove, describe } = steps;
  return {
    /** Starts a fire now, with the schedule's own overlap policy unless another is given. */
    async trigger(r: Receptor, overlap?: ScheduleTiming['overlap']): Promise<void> {
      if (!(await describe(r._id))) await sync(r);
      await handle(r._id).trigger(OVERLAP[overlap ?? r.timing!.overlap]);
    },

    /** Starts the fires a past range would have had (the schedule's spec decides which times). */
    async backfill(r: Receptor, startAt: Date, endAt: Date, overlap: ScheduleTiming['overlap']): Promise<number> {
      if (!(await describe(r._id))) await sync(r);
      const times = await steps.matchingTimes(r._id, startAt, endAt, MAX_BACKFILL + 1);
      if (times.length > MAX_BACKFILL)
        throw validationError(`backfill would start more than ${MAX_BACKFILL} runs: narrow the range`);
      await handle(r._id).backfill({ start: startAt, end: endAt, overlap: OVERLAP[overlap] });
      return times.length;
    },

    /**
     * Repairs drift between receptors and schedules: a `receptor-*` schedule whose receptor is gone
     * (or no longer scheduled) is deleted; a scheduled receptor whose schedule is missing, differs
     * or has the wrong pause state is synced. Returns what it changed.
     */
    async reconcile(scheduled: Receptor[]): Promise<{ created: string[]; removed: string[]; checked: number }> {
      const want = new Map(scheduled.filter((r) => r.timing).map((r) => [r._id, r]));
      const removed: string[] = [];
      const created: string[] = [];
      const seen = new Set<string>();
      for await (const s of temporal.schedule.list()) {
        // A preview's schedule lives for one request: one younger than PREVIEW_GRACE_MS is in use.
        if (previewInUse(s.scheduleId)) continue;
        const id = receptorIdOf(s.scheduleId);
        if (!id) continue;
        seen.add(id);
        if (!want.has(id)) {
          await remove(id);
          removed.push(s.scheduleId);
        }
      }
      for (const r of want.values()) {
        // The list is eventually consistent: describe before creating.
        if (!seen.has(r._id) && !(await describe(r._id))) created.push(scheduleIdOf(r._id));
        await sync(r);
      }
      return { created, removed, checked: want.size };
    },
  };
}
type ScheduleSync = ReturnType<typeof createScheduleSync>;
export type ScheduleService = ReturnType<typeof createScheduleService>;

/** The schedules of previews (`preview`): `receptor-preview-<created, epoch ms>-<uuid>`. */
const PREVIEW_PREFIX = 'receptor-preview-';
/** How often a fire-time question is asked before its failure is the caller's (`matching`). */
const MATCHING_ATTEMPTS = 3;
/** How long a preview's answer is reused for the same timing and count. */
const PREVIEW_CACHE_MS = 15_000;
/** Timings whose answers are kept (the oldest goes first). */
const PREVIEW_CACHE_MAX = 500;
/** Fire times asked beyond the count, so a cached answer still has `count` ahead a little later. */
const PREVIEW_SPARE = 5;
/** Previews under way at once in a process (each three Temporal calls); the rest wait in turn. */
const PREVIEW_MAX_AT_ONCE = 4;
/** A workspace's share of them (docs/operations.md, "Fair share"): past it, 429. */
const PREVIEW_WORKSPACE_SHARE = shareOf(PREVIEW_MAX_AT_ONCE, 50);
const previewLimiter = createLimiter(PREVIEW_MAX_AT_ONCE);
const previewsOf = new Map<string, number>();
const previewCache = new Map<string, { at: number; times: Date[] }>();
/** How long the reconciler leaves a preview's schedule alone (it is deleted by its request well before). */
const PREVIEW_GRACE_MS = 10 * 60_000;
const previewInUse = (scheduleId: string): boolean => {
  if (!scheduleId.startsWith(PREVIEW_PREFIX)) return false;
  const created = Number(scheduleId.slice(PREVIEW_PREFIX.length).split('-')[0]);
  return Number.isFinite(created) && Date.now() - created < PREVIEW_GRACE_MS;
};

/** Most runs one backfill may start. */
const MAX_BACKFILL = 500;
