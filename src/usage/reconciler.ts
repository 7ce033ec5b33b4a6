import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../kernel/config.js';
import type { BudgetDoc } from './model.js';
import { periodKey, type UsageCounters } from './counters.js';
import { GROUP_SUMS, groupRows, mergeGroups, type UsageGroup, type UsageRowDoc } from './groups.js';
import { cumulativeId, DAY_H, HOUR_MS, hourOf, rollupId } from './model.js';
import type { BudgetStore, UsageStore } from './store.js';
import type { WorkspaceRepo } from '../platform/index.js';
import { metrics } from '../kernel/metrics.js';
import type { BudgetService } from './budgets.js';

/** How far back each run replays ledger rows into the counters and checks hours (the counters' row markers are kept longer). */
const RECONCILE_LOOKBACK_H = 48;
/** An hour is stored as a rollup once it has been closed this long (rows are written right after their call). */
const ROLLUP_GRACE_MS = 5 * 60_000;
/** The Temporal Schedule that runs the reconciler (Schedules in the Temporal UI). */
const RECONCILE_SCHEDULE_ID = 'usage-reconcile';

/** What one run found and did, per workspace or summed over all. */
export interface ReconcileReport {
  workspaces: number;
  /** Ledger rows the counters had not counted (added now): Redis lost writes, or a writer died between its row and its counters. */
  rowsRecounted: number;
  /** Closed hours stored as rollups by this run. */
  hoursStored: number;
  /** Stored rollups that differed from the ledger (rewritten): a row written after its hour was stored. */
  hoursCorrected: number;
  /** Cumulative rollups (everything through a closed day) stored by this run. */
  cumulativeStored: number;
  /** Stored cumulative rollups rewritten (a day before them was corrected). */
  cumulativeCorrected: number;
  /** Hours whose counters differ from the ledger after the replay (more counted than the ledger holds; reported, not used once stored). */
  hourCounterDrift: number;
  /** Budget counters that differed from the ledger's sum for their period (corrected by the difference). */
  budgetCountersCorrected: number;
  /** Budget counters that changed while being checked (checked again at the next run). */
  budgetCountersBusy: number;
  /** Workspaces rebuilt in full from the whole ledger (counters not marked built: an upgrade, a Redis that lost them, rows written around them). */
  fullRebuilds: number;
  /** Rows stored without `firstOf` whose invocations were decided now (rows from before it, or written around the counters). */
  invocationsDecided: number;
  /** Spend counters (per target, per current day, month and in all) corrected to the ledger's sums by a full rebuild. */
  spendCountersCorrected: number;
}

const emptyReport = (): ReconcileReport => ({
  workspaces: 0,
  rowsRecounted: 0,
  hoursStored: 0,
  hoursCorrected: 0,
  cumulativeStored: 0,
  cumulativeCorrected: 0,
  hourCounterDrift: 0,
  budgetCountersCorrected: 0,
  budgetCountersBusy: 0,
  fullRebuilds: 0,
  invocationsDecided: 0,
  spendCountersCorrected: 0,
});

/** Two sets of groups with the same sums (groups of all zeros count as absent). */
function sameGroups(a: Map<string, UsageGroup>, b: Map<string, UsageGroup>): boolean {
  const nonZero = (m: Map<string, UsageGroup>) =>
    [...m.entries()].filter(([, g]) => GROUP_SUMS.some((k) => g[k] !== 0));
  const x = nonZero(a);
  const y = new Map(nonZero(b));
  return (
    x.length === y.size &&
    x.every(([id, g]) => {
      const o = y.get(id);
      return o !== undefined && GROUP_SUMS.every((k) => o[k] === g[k]);
    })
  );
}

/** What the reconciler's steps share: the ledger's store and counters, the budgets, the workspaces and the schedule's client. */
interface ReconcileContext {
  usage: UsageStore;
  counters: UsageCounters;
  budgetRepo: BudgetStore;
  budgets: BudgetService;
  workspaces: WorkspaceRepo;
  temporal: Client;
  config: Config;
  log: Logger;
}

/**
 * Spend counters of every target (the workspace, each receptor, neuron and share link the ledger
 * or a budget names) for the current UTC day, month and in all, made the ledger's sums (`rows` is
 * every row of the workspace): a field that did not move while it was compared is corrected by
 * its difference; one that moved is left to the next run. Returns [corrected, busy].
 */
async function rebuildSpend(
  d: ReconcileContext,
  workspaceId: string,
  rows: UsageRowDoc[],
  now: Date,
): Promise<[number, number]> {
  const { usage, counters } = d;
  type Target = { scope: BudgetDoc['scope']; id: string | null };
  const targets = new Map<string, Target>([['workspace:-', { scope: 'workspace', id: null }]]);
  const want = new Map<string, Map<string, number>>();
  const add = (t: Target, field: string, v: number) => {
    const k = `${t.scope}:${t.id ?? '-'}`;
    targets.set(k, t);
    const m = want.get(k) ?? new Map<string, number>();
    m.set(field, (m.get(field) ?? 0) + v);
    want.set(k, m);
  };
  const day = periodKey('day', now);
  const month = periodKey('month', now);
  const count = (
    g: { receptorId?: string | null; neuronId?: string | null; shareTokenId?: string | null },
    at: Date,
    tokens: number,
    cost: number,
  ) => {
    const ts: Target[] = [{ scope: 'workspace', id: null }];
    if (g.receptorId) ts.push({ scope: 'receptor', id: g.receptorId });
    if (g.neuronId) ts.push({ scope: 'neuron', id: g.neuronId });
    if (g.shareTokenId) ts.push({ scope: 'share_token', id: g.shareTokenId });
    const periods = [
      'all',
      ...(periodKey('month', at) === month ? [month] : []),
      ...(periodKey('day', at) === day ? [day] : []),
    ];
    for (const t of ts)
      for (const p of periods) {
        add(t, `${p}:tokens`, tokens);
        add(t, `${p}:cost`, cost);
      }
  };
  // Closed hours count from their stored rollups (just made the ledger's sums by this rebuild, or
  // kept as the record of rows retention removed: src/tenancy deletes a ledger row only once its
  // hour is a rollup), so a month's and the all-time counters keep what retention removed. Hours
  // without a rollup (the open ones) count from the ledger rows.
  const rolled = await usage.rollupsBetween(workspaceId, null, null);
  const rolledHours = new Set(rolled.map((h) => hourOf(h.hour)));
  for (const h of rolled) for (const g of h.groups) count(g, h.hour, g.tokens, g.costNanos);
  // Rows written since the ledger was read (their writers may have counted them already).
  const seen = new Set(rows.map((r) => r._id));
  const since = await usage.rowsBetween(workspaceId, new Date(now.getTime() - 15 * 60_000), null);
  for (const r of [...rows, ...since.filter((x) => !seen.has(x._id))])
    if (!rolledHours.has(hourOf(r.at))) count(r, r.at, r.totalTokens, r.costNanos);
  for (const b of await d.budgetRepo.ofWorkspace(workspaceId))
    targets.set(`${b.scope}:${b.targetId ?? '-'}`, { scope: b.scope, id: b.targetId });
  let corrected = 0;
  let busy = 0;
  const fields = [`all:tokens`, `all:cost`, `${month}:tokens`, `${month}:cost`, `${day}:tokens`, `${day}:cost`];
  for (const [k, t] of targets) {
    const before = await counters.spendHash(workspaceId, t.scope, t.id);
    const after = await counters.spendHash(workspaceId, t.scope, t.id);
    const deltas: [string, number][] = [];
    for (const f of fields) {
      const target = want.get(k)?.get(f) ?? 0;
      const have = Number(after[f] ?? 0);
      if (Number(before[f] ?? 0) !== have) busy++;
      else if (target !== have) deltas.push([f, target - have]);
    }
    if (deltas.length) {
      await counters.adjustFields(workspaceId, t.scope, t.id, deltas);
      corrected += deltas.length;
    }
  }
  return [corrected, busy];
}

/**
 * Step 0 of a run: the invocations of rows stored without `firstOf` (older rows, rows written
 * around the counters), decided now in time order and recorded on the row, so rollups and
 * counters count them once. `rows` is sorted by time; their `firstOf` is set in place.
 */
async function decideInvocations(
  { usage, counters }: ReconcileContext,
  workspaceId: string,
  rows: UsageRowDoc[],
  report: ReconcileReport,
): Promise<void> {
  const claimed = new Set(rows.flatMap((r) => counters.claimedBy(r)));
  const undecided = rows.filter((r) => r.firstOf === undefined);
  if (!undecided.length) return;
  const decided = await counters.decideFirsts(workspaceId, undecided, claimed);
  if (!decided.size) return;
  await usage.setFirstOf(workspaceId, decided);
  for (const r of undecided) {
    const f = decided.get(r._id);
    if (f) r.firstOf = f;
  }
  report.invocationsDecided = decided.size;
}

/**
 * Step 2 of a run: every hour from `fromHour` (those of `rows` and those with counters, `listed`)
 * checked against its counters when in the look-back window; closed ones (before `closedBefore`)
 * stored as rollups from the ledger, or rewritten when a stored one differs.
 */
async function storeHours(
  { usage, counters }: ReconcileContext,
  workspaceId: string,
  w: { rows: UsageRowDoc[]; listed: number[]; fromHour: number; lookFrom: number; closedBefore: number; now: Date },
  report: ReconcileReport,
): Promise<void> {
  const { listed, lookFrom, closedBefore, now } = w;
  const byHour = new Map<number, UsageRowDoc[]>();
  for (const r of w.rows) {
    const h = hourOf(r.at);
    const list = byHour.get(h);
    if (list) list.push(r);
    else byHour.set(h, [r]);
  }
  const hours = [...new Set([...byHour.keys(), ...listed])].sort((a, b) => a - b);
  const [stored, counted] = await Promise.all([
    usage.rollupsBetween(workspaceId, w.fromHour, null),
    counters.hourGroups(workspaceId, hours),
  ]);
  const storedAt = new Map(stored.map((s) => [hourOf(s.hour), s]));
  for (const h of hours) {
    const ledger = groupRows(byHour.get(h) ?? []);
    const checked = h >= lookFrom || listed.includes(h);
    if (checked && !sameGroups(ledger, mergeGroups(new Map(), counted.get(h) ?? []))) report.hourCounterDrift++;
    if (h >= closedBefore) continue;
    const doc = {
      _id: rollupId(workspaceId, h),
      workspaceId,
      hour: new Date(h * HOUR_MS),
      groups: [...ledger.values()],
      rows: byHour.get(h)?.length ?? 0,
      computedAt: now,
    };
    const have = storedAt.get(h);
    if (!have) {
      if (doc.rows > 0 && (await usage.storeRollup(doc))) report.hoursStored++;
    } else if (doc.rows >= have.rows && !sameGroups(ledger, mergeGroups(new Map(), have.groups))) {
      // A stored rollup counting more rows than the ledger holds keeps rows retention removed
      // (src/tenancy: a ledger row goes only once its hour is a rollup): it is the record now.
      // Only the reconciler writes a stored rollup after its claim (one run at a time: the schedule skips overlaps).
      await usage.correctRollup(doc);
      report.hoursCorrected++;
    }
  }
}

/**
 * Step 2b of a run: cumulative rollups, everything through each closed day whose hours all lie in
 * this run's window (so each of its hours was just stored or checked): the previous day's
 * cumulative rollup plus that day's hour rollups. A chain with no day before this window starts
 * with a base, everything before it summed from the ledger and stored as the cumulative rollup of
 * the day before (a workspace's first run, or a reconciler that did not run for two days).
 */
async function storeCumulative(
  { usage }: ReconcileContext,
  workspaceId: string,
  fromHour: number,
  closedBefore: number,
  now: Date,
  report: ReconcileReport,
): Promise<void> {
  const firstDay = Math.ceil(fromHour / DAY_H);
  const endDay = Math.floor(closedBefore / DAY_H);
  if (firstDay >= endDay) return;
  const [hourDocs, cumulative] = await Promise.all([
    usage.rollupsBetween(workspaceId, firstDay * DAY_H, endDay * DAY_H),
    usage.cumulativeBetween(workspaceId, firstDay - 1, endDay),
  ]);
  const perDay = new Map<number, { groups: Map<string, UsageGroup>; rows: number }>();
  for (const h of hourDocs) {
    const day = Math.floor(hourOf(h.hour) / DAY_H);
    const acc = perDay.get(day) ?? { groups: new Map<string, UsageGroup>(), rows: 0 };
    mergeGroups(acc.groups, h.groups);
    acc.rows += h.rows;
    perDay.set(day, acc);
  }
  const stored = new Map(cumulative.map((c) => [Math.floor(hourOf(c.day) / DAY_H), c]));
  const docOf = (day: number, chainFrom: number, groups: Map<string, UsageGroup>, rows: number) => ({
    _id: cumulativeId(workspaceId, day),
    workspaceId,
    day: new Date(day * DAY_H * HOUR_MS),
    chainFrom,
    groups: [...groups.values()],
    rows,
    computedAt: now,
  });
  let prev = stored.get(firstDay - 1);
  let prevGroups: Map<string, UsageGroup>;
  if (prev) prevGroups = mergeGroups(new Map(), prev.groups);
  else {
    const base = await usage.rowsBetween(workspaceId, null, new Date(firstDay * DAY_H * HOUR_MS));
    prevGroups = groupRows(base);
    prev = docOf(firstDay - 1, firstDay, prevGroups, base.length);
    if (await usage.storeCumulative(prev)) report.cumulativeStored++;
  }
  for (let day = firstDay; day < endDay; day++) {
    const acc = perDay.get(day) ?? { groups: new Map<string, UsageGroup>(), rows: 0 };
    const groups = mergeGroups(new Map(prevGroups), acc.groups.values());
    const doc = docOf(day, prev.chainFrom, groups, prev.rows + acc.rows);
    const have = stored.get(day);
    if (!have) {
      if (await usage.storeCumulative(doc)) report.cumulativeStored++;
    } else if (have.rows !== doc.rows || !sameGroups(groups, mergeGroups(new Map(), have.groups))) {
      await usage.correctCumulative(doc);
      report.cumulativeCorrected++;
    }
    prev = doc;
    prevGroups = groups;
  }
}

/**
 * Step 3 of an incremental run: each budget's counter of its current period corrected by its
 * difference from the ledger when it did not change while the ledger was summed (else a write in
 * flight would be counted twice).
 */
async function checkBudgetCounters(
  d: ReconcileContext,
  workspaceId: string,
  now: Date,
  report: ReconcileReport,
): Promise<void> {
  const { counters } = d;
  for (const b of await d.budgetRepo.ofWorkspace(workspaceId)) {
    const key = { workspaceId, scope: b.scope, targetId: b.targetId, period: b.period, measure: b.measure };
    const [before] = await counters.spent([key], now);
    const fromLedger = await d.budgets.spentFromLedger(b, now);
    const [after] = await counters.spent([key], now);
    if (before !== after) report.budgetCountersBusy++;
    else if (fromLedger !== after) {
      await counters.adjust(key, fromLedger - after, now);
      report.budgetCountersCorrected++;
      d.log.warn(
        { workspaceId, budgetId: b._id, counter: after, ledger: fromLedger },
        'usage reconcile: budget counter drift corrected',
      );
    }
  }
}

/**
 * Step 4 of an incremental run: whether the rows before the last stored day's end are fewer than
 * the cumulative rollup through that day counts (a row written around the counters before the
 * look-back window would be missing from it). Fewer rows than the rollup counts are rows
 * retention removed, not missing from it.
 */
async function rollupsBehind(d: ReconcileContext, workspaceId: string, now: Date): Promise<boolean> {
  const { usage } = d;
  const lastDay = Math.floor(hourOf(now.getTime() - ROLLUP_GRACE_MS) / DAY_H) - 1;
  const [cum, count] = await Promise.all([
    usage.cumulativeThrough(workspaceId, lastDay),
    usage.countBefore(workspaceId, new Date((lastDay + 1) * DAY_H * HOUR_MS)),
  ]);
  if (!cum || count <= cum.rows) return false;
  d.log.warn(
    { workspaceId, cumulative: cum?.rows ?? 0, ledger: count },
    'usage reconcile: rollups behind the ledger; rebuilding the workspace in full',
  );
  return true;
}

/** Drift found by a run: counted in `cortex_usage_drift_total` and logged. */
function reportDrift(d: ReconcileContext, workspaceId: string, report: ReconcileReport): void {
  const drift = {
    rows_recounted: report.rowsRecounted,
    rollup_corrected: report.hoursCorrected,
    cumulative_corrected: report.cumulativeCorrected,
    hour_counter: report.hourCounterDrift,
    budget_counter: report.budgetCountersCorrected,
  };
  for (const [kind, n] of Object.entries(drift)) if (n) metrics.usageDrift.inc({ kind }, n);
  if (Object.values(drift).some((n) => n > 0))
    d.log.warn({ workspaceId, ...report }, 'usage reconcile: drift between the ledger and its counters or rollups');
}

/** The runs: one workspace made what its ledger says (a full rebuild when its counters are not built), or every workspace. */
function createReconcileRuns(d: ReconcileContext) {
  const { usage, counters } = d;

  async function workspace(
    workspaceId: string,
    now = new Date(),
    opts: { since?: Date; full?: boolean } = {},
  ): Promise<ReconcileReport> {
    const report = { ...emptyReport(), workspaces: 1 };
    // Counters not marked built (an upgrade, a Redis that lost them, a workspace never rebuilt) or
    // found behind the ledger: everything is rebuilt from the whole ledger, then marked built.
    const full = opts.full === true || !(await counters.isBuilt(workspaceId));
    const token = full ? await counters.beginRebuild(workspaceId) : null;
    if (full && token === null) {
      d.log.info({ workspaceId }, 'usage reconcile: a full rebuild of this workspace is under way elsewhere');
      return report;
    }
    if (full) report.fullRebuilds = 1;
    const lookFrom = hourOf(opts.since ?? new Date(now.getTime() - RECONCILE_LOOKBACK_H * HOUR_MS));
    const listed = await counters.hoursWithCounters(workspaceId, null, null);
    let fromHour = Math.min(lookFrom, ...listed);
    const rows = full
      ? await usage.rowsBetween(workspaceId, null, null)
      : await usage.rowsBetween(workspaceId, new Date(fromHour * HOUR_MS), null);
    rows.sort((a, b) => a.at.getTime() - b.at.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
    if (full && rows.length) fromHour = Math.min(fromHour, hourOf(rows[0].at));
    // 0. Invocations of rows stored without `firstOf`.
    await decideInvocations(d, workspaceId, rows, report);
    // 1. Counters: every recent row counted once (a row already counted is skipped by its marker).
    report.rowsRecounted = await counters.countAll(rows.filter((r) => hourOf(r.at) >= lookFrom));
    // 2. Hours: closed ones stored as rollups from the ledger; every one checked against its counters.
    const closedBefore = hourOf(now.getTime() - ROLLUP_GRACE_MS);
    await storeHours(d, workspaceId, { rows, listed, fromHour, lookFrom, closedBefore, now }, report);
    // 2b. Cumulative rollups through each closed day of this run's window.
    await storeCumulative(d, workspaceId, fromHour, closedBefore, now, report);
    await counters.forgetHours(workspaceId, closedBefore);
    // 3. Budget counters of the current periods, corrected to the ledger's sums.
    // A full rebuild makes every target's counters (budget or not: a share link's used_tokens, a
    // budget created later) the ledger's sums for the current day, month and in all.
    if (full) {
      const [corrected, busy] = await rebuildSpend(d, workspaceId, rows, now);
      report.spendCountersCorrected = corrected;
      report.budgetCountersBusy += busy;
    } else await checkBudgetCounters(d, workspaceId, now, report);
    // 4. Completeness: if the ledger holds rows the rollups miss, the counters are marked behind and
    // rebuilt in full at once.
    if (!full) {
      if (await rollupsBehind(d, workspaceId, now)) {
        await counters.unbuilt(workspaceId);
        const again = await workspace(workspaceId, now, { ...opts, full: true });
        for (const k of Object.keys(report) as (keyof ReconcileReport)[]) if (k !== 'workspaces') report[k] += again[k];
        return report;
      }
    } else if (token && !(await counters.finishRebuild(workspaceId, token)))
      d.log.warn({ workspaceId }, 'usage reconcile: Redis lost the rebuild under way; it is rebuilt again next run');
    reportDrift(d, workspaceId, report);
    return report;
  }

  return {
    workspace,

    /** Every workspace, one after the other; a workspace that fails is logged and skipped. */
    async all(now = new Date()): Promise<ReconcileReport> {
      const total = emptyReport();
      for (const id of await d.workspaces.workspaceIds()) {
        try {
          const r = await workspace(id, now);
          for (const k of Object.keys(total) as (keyof ReconcileReport)[]) total[k] += r[k];
        } catch (e) {
          d.log.warn(
            { workspaceId: id, err: (e as Error).message },
            'usage reconcile failed for a workspace; it runs again at the next tick',
          );
        }
      }
      d.log.info(total, 'usage reconciled');
      return total;
    },
  };
}

/** The Temporal Schedule that runs the reconciler: created at worker start, triggered at once when counters are not built. */
function createReconcileSchedule(d: ReconcileContext) {
  const { counters } = d;
  return {
    /**
     * At worker start: when some workspace's counters are not marked built (an upgrade from a version
     * without counters, a Redis that lost them), the schedule is triggered now rather than at its
     * next tick (meanwhile budgets and the usage routes read the ledger). Returns whether it was.
     */
    async rebuildIfNeeded(): Promise<boolean> {
      const ids = await d.workspaces.workspaceIds();
      const built = await Promise.all(ids.map((id) => counters.isBuilt(id)));
      if (built.every(Boolean)) return false;
      d.log.info({ workspaces: built.filter((b) => !b).length }, 'usage counters not built: reconciling now');
      await d.temporal.schedule.getHandle(RECONCILE_SCHEDULE_ID).trigger();
      return true;
    },

    /** Creates the reconciler's schedule unless it exists (at worker start; idempotent). */
    async ensureSchedule(): Promise<void> {
      try {
        await d.temporal.schedule.create({
          scheduleId: RECONCILE_SCHEDULE_ID,
          spec: { intervals: [{ every: d.config.USAGE_RECONCILE_EVERY_S * 1000 }] },
          action: {
            type: 'startWorkflow',
            workflowType: 'usageReconcile',
            taskQueue: d.config.TEMPORAL_TASK_QUEUE,
            workflowId: 'usage-reconcile',
            args: [],
          },
          policies: { overlap: 'SKIP', catchupWindow: 60_000 },
          state: { note: 'usage counters and rollups from the ledger (docs/usage.md)' },
        });
      } catch (e) {
        if (!(e instanceof ScheduleAlreadyRunning)) throw e;
      }
    },
  };
}

/**
 * The usage reconciler (docs/usage.md): a system job on a Temporal Schedule that makes the
 * counters and rollups what the ledger says. Per workspace: it replays the last
 * RECONCILE_LOOKBACK_H hours of ledger rows into the counters (idempotent: a counted row's marker
 * makes the replay a no-op), stores every closed hour as a rollup computed from the ledger (and
 * rewrites a stored one that differs), and checks each budget's counter against the ledger's sum
 * for its period. Drift is logged, counted in `cortex_usage_drift_total` and returned.
 */
export function createUsageReconciler(d: ReconcileContext) {
  return { ...createReconcileRuns(d), ...createReconcileSchedule(d) };
}
