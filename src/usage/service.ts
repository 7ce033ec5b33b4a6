import {
  subtractGroups,
  groupRows,
  mergeGroups,
  type UsageAttribution,
  type UsageGroup,
  type UsageRowDoc,
  type UsageSums,
} from './groups.js';
import { DAY_H, HOUR_MS, hourOf } from './model.js';
import type { LedgerMatch, LedgerQuery, Measure, UsageStore } from './store.js';
import type { UsageCounters } from './counters.js';
import { notFound, validationError } from '../kernel/errors.js';
import { costOf, costOfAudio, pricesAt } from '../llm/pricing.js';
import type { TokenUsage } from '../llm/types.js';
import type { Scope } from '../kernel/scope.js';

/** One billed provider call, as the activity that made it reports it. */
export interface BilledCall {
  /** Idempotency key of the call (e.g. `<job>:chat:<turn>:<attempt>`): a retried write adds nothing. */
  key: string;
  workspaceId: string;
  attribution: UsageAttribution;
  kind: UsageRowDoc['kind'];
  /** `provider/model`. */
  modelId: string;
  usage: TokenUsage;
  outcome?: UsageRowDoc['outcome'];
  estimated?: boolean;
  at?: Date;
  /** Transcription calls: the audio sent (priced per minute; their token counts are 0). */
  audioMs?: number;
  /** false: the caller finds the row by its key (a run's model calls), so no job place is written. */
  placed?: boolean;
}

/** The window of a usage query (dates as sent) and its receptor filter. @public (in the service's signature) */
export interface UsageWindow {
  startDate?: string;
  endDate?: string;
  receptorId?: string;
}
/** A facet whose values are resources (usageByResource). @public (in the service's signature) */
export type ResourceFacet = 'receptor' | 'neuron' | 'pathway';

const usd = (nanos: number) => nanos / 1e9;
/** What rows add up to, as a job's result reports it. */
function totalsOfRows(rows: UsageRowDoc[]) {
  const sum = (f: (r: UsageRowDoc) => number) => rows.reduce((n, r) => n + f(r), 0);
  return {
    inputTokens: sum((r) => r.inputTokens),
    outputTokens: sum((r) => r.outputTokens),
    totalTokens: sum((r) => r.totalTokens),
    costUsd: usd(sum((r) => r.costNanos)),
    calls: rows.length,
  };
}
const NANOS = 1e9;
/**
 * A repeated write of a row the ledger holds already counts the stored row (a writer that died
 * between its row and its counters), while the row's counter marker is surely still kept (it is
 * kept 3 days); an older repeat adds nothing.
 */
const COUNT_RETRY_WINDOW_MS = 2 * 86_400_000;

type Keyed = UsageSums & { key: string | null };
const emptySums = (): UsageSums => ({
  tokens: 0,
  costNanos: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  rows: 0,
});
/** Per facet, what the figures are made of: sums per value (null: unattributed) and invocations per resource. */
interface Facets {
  total: UsageSums;
  provider: Keyed[];
  model: Keyed[];
  unpricedModels: Set<string | null>;
  receptor: Keyed[];
  neuron: Keyed[];
  pathway: Keyed[];
  invokes: Record<ResourceFacet, Map<string, number>>;
}

/** The window as [from, to) (null: unbounded). endDate is inclusive: a date alone (2026-01-31) covers that whole UTC day. */
function rangeOf(w: UsageWindow): { from: Date | null; to: Date | null } {
  const from = w.startDate ? new Date(w.startDate) : null;
  const end = w.endDate ? new Date(w.endDate) : null;
  if (from && end && from > end) throw validationError('startDate must not be after endDate');
  const dayOnly = w.endDate !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(w.endDate);
  // Ledger times are whole milliseconds: `at <= end` is `at < end + 1 ms`.
  return { from, to: end ? new Date(end.getTime() + (dayOnly ? 86_400_000 : 1)) : null };
}

function windowQuery(workspaceId: string, w: UsageWindow): LedgerQuery {
  const { from, to } = rangeOf(w);
  return { workspaceId, from, to, ...(w.receptorId ? { receptorId: w.receptorId } : {}) };
}

/** Who the figures are about: the caller's own calls (its user, or its API key without a user), or the whole workspace. */
function narrowOf(scope: Scope, w: UsageWindow, caller: boolean): LedgerMatch {
  const narrow: LedgerMatch = {};
  if (caller) {
    if (scope.userId) narrow.userId = scope.userId;
    else if (scope.apiKeyId) narrow.apiKeyId = scope.apiKeyId;
    else throw validationError('usage for the caller needs a user or API key credential');
  }
  if (w.receptorId) narrow.receptorId = w.receptorId;
  return narrow;
}

/** What the usage service's groups share: the ledger's store and its counters. */
interface UsageContext {
  repo: UsageStore;
  counters: UsageCounters;
}

/**
 * The groups of a window (docs/usage.md, "Counters and rollups"): whole hours from the stored
 * rollups, or from the hour counters for hours not stored yet (the open hour, the last closed
 * ones); the parts of hours at the window's edges from the ledger rows of those parts. The cost
 * is bounded by the hours and groups in the window, not by the calls.
 */
async function groupsIn(
  ctx: UsageContext,
  workspaceId: string,
  range: { from: Date | null; to: Date | null },
  narrow: LedgerMatch,
): Promise<UsageGroup[]> {
  const { repo, counters } = ctx;
  const now = Date.now();
  const { from, to } = range;
  if (from && from.getTime() > now) return [];
  // Whole hours: [first, end). Hours up to the open one are whole when the window reaches now.
  const first = from ? Math.ceil(from.getTime() / HOUR_MS) : null;
  const end = !to || to.getTime() > now ? hourOf(now) + 1 : Math.floor(to.getTime() / HOUR_MS);
  const edges: [Date | null, Date | null][] = [];
  if (first !== null && first >= end) edges.push([from, to]);
  else {
    if (from && first! * HOUR_MS > from.getTime()) edges.push([from, new Date(first! * HOUR_MS)]);
    if (to && to.getTime() <= now && end * HOUR_MS < to.getTime()) edges.push([new Date(end * HOUR_MS), to]);
  }
  const whole = first === null || first < end;
  // The whole days of the window: two cumulative rollups, through its last day minus through the
  // day before its first; the whole hours outside them from hour rollups, and from the hour
  // counters for hours not stored yet. A window that starts before the cumulative chain of its
  // last day takes that chain's base instead, and the hours before the chain.
  const dayFrom = first === null ? null : Math.ceil(first / DAY_H);
  const dayTo = Math.floor(end / DAY_H);
  const wholeDays = whole && (dayFrom === null || dayFrom < dayTo);
  const [hi, before, listed, edgeRows] = await Promise.all([
    wholeDays ? repo.cumulativeThrough(workspaceId, dayTo - 1) : Promise.resolve(null),
    wholeDays && dayFrom !== null ? repo.cumulativeThrough(workspaceId, dayFrom - 1) : Promise.resolve(null),
    whole ? counters.hoursWithCounters(workspaceId, first, end) : Promise.resolve([]),
    Promise.all(edges.map(([a, b]) => repo.rowsBetween(workspaceId, a, b, narrow))),
  ]);
  let lo = before;
  let spanFrom = dayFrom;
  if (hi && dayFrom !== null && !lo && dayFrom < hi.chainFrom) {
    lo = await repo.cumulativeThrough(workspaceId, hi.chainFrom - 1);
    spanFrom = hi.chainFrom;
  }
  const span = hi && (spanFrom === null || lo) ? { from: spanFrom, to: dayTo } : null;
  const underDay = (h: number) => {
    const day = Math.floor(h / DAY_H);
    return span !== null && (span.from === null || day >= span.from) && day < span.to;
  };
  const gaps: [number | null, number][] = [];
  if (whole && span) {
    if (span.from !== null && first !== null && first < span.from * DAY_H) gaps.push([first, span.from * DAY_H]);
    if (span.to * DAY_H < end) gaps.push([span.to * DAY_H, end]);
  } else if (whole) gaps.push([first, end]);
  const [stored, countedAll] = await Promise.all([
    Promise.all(gaps.map(([a, b]) => repo.rollupsBetween(workspaceId, a, b))).then((x) => x.flat()),
    counters.hourGroups(
      workspaceId,
      listed.filter((h) => !underDay(h)),
    ),
  ]);
  const storedHours = new Set(stored.map((r) => hourOf(r.hour)));
  const counted = [...countedAll].filter(([h]) => !storedHours.has(h)).map(([, g]) => g);
  const all = new Map<string, UsageGroup>();
  if (span && hi) mergeGroups(all, subtractGroups(hi.groups, lo ? lo.groups : []));
  for (const r of stored) mergeGroups(all, r.groups);
  for (const g of counted) mergeGroups(all, g);
  for (const rows of edgeRows) mergeGroups(all, groupRows(rows).values());
  const keep = Object.entries(narrow) as [keyof UsageGroup, unknown][];
  return [...all.values()].filter((g) => keep.every(([k, v]) => g[k] === v));
}

/** The facets of a set of groups (rollups, counters and edge rows), summed here. */
function facetsOfGroups(groups: UsageGroup[]): Facets {
  const by = (field: 'provider' | 'model' | 'receptorId' | 'neuronId' | 'pathwayId'): Keyed[] => {
    const out = new Map<string | null, Keyed>();
    for (const g of groups) {
      const key = g[field] ?? null;
      const k = out.get(key) ?? { key, ...emptySums() };
      k.tokens += g.tokens;
      k.costNanos += g.costNanos;
      k.inputTokens += g.inputTokens;
      k.outputTokens += g.outputTokens;
      k.cachedInputTokens += g.cachedInputTokens;
      k.rows += g.rows;
      out.set(key, k);
    }
    return [...out.values()];
  };
  const invokes = (
    field: 'receptorId' | 'neuronId' | 'pathwayId',
    m: 'receptorInvokes' | 'neuronInvokes' | 'pathwayInvokes',
  ) => {
    const out = new Map<string, number>();
    for (const g of groups) if (g[field] && g[m]) out.set(g[field], (out.get(g[field]) ?? 0) + g[m]);
    return out;
  };
  return {
    total: by('provider').reduce(
      (t, k) => ({
        ...t,
        tokens: t.tokens + k.tokens,
        costNanos: t.costNanos + k.costNanos,
        inputTokens: t.inputTokens + k.inputTokens,
        outputTokens: t.outputTokens + k.outputTokens,
        cachedInputTokens: t.cachedInputTokens + k.cachedInputTokens,
        rows: t.rows + k.rows,
      }),
      emptySums(),
    ),
    provider: by('provider'),
    model: by('model'),
    unpricedModels: new Set(groups.filter((g) => !g.priced && g.rows > 0).map((g) => g.model)),
    receptor: by('receptorId'),
    neuron: by('neuronId'),
    pathway: by('pathwayId'),
    invokes: {
      receptor: invokes('receptorId', 'receptorInvokes'),
      neuron: invokes('neuronId', 'neuronInvokes'),
      pathway: invokes('pathwayId', 'pathwayInvokes'),
    },
  };
}

/**
 * The same facets summed by the store over the ledger rows themselves (one single-accumulator
 * aggregation per measure and facet; reads every row of the window): the reference the rollups
 * are checked against (the reconciler, tests). Not on any request path.
 */
async function facetsOfLedger({ repo }: UsageContext, filter: LedgerQuery): Promise<Facets> {
  const spend: Measure[] = ['tokens', 'costNanos'];
  const perResource: Measure[] = ['tokens', 'costNanos', 'inputTokens', 'outputTokens', 'cachedInputTokens'];
  const [total, provider, model, unpriced, receptor, neuron, pathway, rInv, nInv, pInv] = await Promise.all([
    repo.sums(filter, null),
    repo.sums(filter, 'provider', spend),
    repo.sums(filter, 'model', spend),
    repo.sums({ ...filter, priced: false }, 'model', ['rows']),
    repo.sums(filter, 'receptorId', perResource),
    repo.sums(filter, 'neuronId', perResource),
    repo.sums(filter, 'pathwayId', perResource),
    repo.jobsPer(filter, 'receptorId', 'runId'),
    repo.jobsPer(filter, 'neuronId', 'jobId'),
    repo.jobsPer(filter, 'pathwayId', 'runId'),
  ]);
  return {
    total: total[0] ?? emptySums(),
    provider,
    model,
    unpricedModels: new Set(unpriced.map((u) => u.key)),
    receptor,
    neuron,
    pathway,
    invokes: { receptor: rInv, neuron: nInv, pathway: pInv },
  };
}

async function byResource({ repo }: UsageContext, facet: ResourceFacet, f: Facets, workspaceId: string) {
  const attributed = f[facet].filter((g) => g.key !== null);
  const named = await repo.resourceNames(
    facet,
    workspaceId,
    attributed.map((g) => g.key!),
  );
  return Object.fromEntries(
    attributed.map((g) => [
      g.key!,
      {
        resourceId: g.key!,
        slug: named.get(g.key!)?.slug ?? null,
        subtype: named.get(g.key!)?.subtype ?? facet,
        tokens: g.tokens,
        cost: usd(g.costNanos),
        invokeCount: f.invokes[facet].get(g.key!) ?? 0,
        inputTokens: g.inputTokens,
        outputTokens: g.outputTokens,
        cachedInputTokens: g.cachedInputTokens,
      },
    ]),
  );
}

/** The usage statistics of a window from its facets (docs/usage.md, "Usage routes"). */
async function present(ctx: UsageContext, workspaceId: string, w: UsageWindow, f: Facets) {
  const t = f.total;
  const facetSum = (groups: Keyed[], attributedOnly = false) => {
    const g = attributedOnly ? groups.filter((x) => x.key !== null) : groups;
    return { tokens: g.reduce((a, x) => a + x.tokens, 0), nanos: g.reduce((a, x) => a + x.costNanos, 0) };
  };
  const integrityOf = (groups: Keyed[], withUnattributed: boolean) => {
    const all = facetSum(groups);
    const attributed = facetSum(groups, true);
    return {
      tokens: attributed.tokens,
      cost: usd(attributed.nanos),
      ...(withUnattributed
        ? { unattributedTokens: all.tokens - attributed.tokens, unattributedCost: usd(all.nanos - attributed.nanos) }
        : {}),
      matchesTotals: all.tokens === t.tokens && all.nanos === t.costNanos,
    };
  };
  const integrity = {
    totalTokens: t.tokens,
    totalCost: usd(t.costNanos),
    provider: integrityOf(f.provider, false),
    model: integrityOf(f.model, false),
    receptor: integrityOf(f.receptor, true),
    neuron: integrityOf(f.neuron, true),
    pathway: integrityOf(f.pathway, true),
  };
  const [receptors, neurons, pathways] = await Promise.all([
    byResource(ctx, 'receptor', f, workspaceId),
    byResource(ctx, 'neuron', f, workspaceId),
    byResource(ctx, 'pathway', f, workspaceId),
  ]);
  return {
    startDate: w.startDate ?? null,
    endDate: w.endDate ?? null,
    totalTokens: t.tokens,
    totalCost: usd(t.costNanos),
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cachedInputTokens: t.cachedInputTokens,
    calls: t.rows,
    usageByProvider: Object.fromEntries(
      f.provider.map((g) => [g.key ?? 'unknown', { tokens: g.tokens, cost: usd(g.costNanos) }]),
    ),
    usageByModel: Object.fromEntries(
      f.model.map((g) => [
        g.key ?? 'unknown',
        { tokens: g.tokens, cost: usd(g.costNanos), priced: !f.unpricedModels.has(g.key) },
      ]),
    ),
    usageByResource: { receptor: receptors, neuron: neurons, pathway: pathways },
    usageRollupIntegrity: {
      ...integrity,
      allFacetsMatchTotals: [
        integrity.provider,
        integrity.model,
        integrity.receptor,
        integrity.neuron,
        integrity.pathway,
      ].every((x) => x.matchesTotals),
    },
  };
}

async function ranking(ctx: UsageContext, workspaceId: string, f: Facets, sortBy: 'tokens' | 'cost' | 'invokeCount') {
  const rows = Object.values(await byResource(ctx, 'receptor', f, workspaceId));
  rows.sort((a, b) => b[sortBy] - a[sortBy] || a.resourceId.localeCompare(b.resourceId));
  return rows.map((r) => ({
    receptorId: r.resourceId,
    receptorSlug: r.slug,
    receptorType: r.subtype,
    tokens: r.tokens,
    cost: r.cost,
    invokeCount: r.invokeCount,
  }));
}

/** The ledger row of a billed call, priced with the table in force at the call (without `firstOf`, decided as it is written). */
function rowOf(c: BilledCall): UsageRowDoc {
  const at = c.at ?? new Date();
  const { version, prices, audio } = pricesAt(at);
  const { costUsd, priced } =
    c.kind === 'transcription' ? costOfAudio(c.modelId, c.audioMs ?? 0, audio) : costOf(c.modelId, c.usage, prices);
  const slash = c.modelId.indexOf('/');
  return {
    _id: c.key,
    workspaceId: c.workspaceId,
    ...c.attribution,
    runId: c.attribution.runId ?? c.attribution.jobId,
    kind: c.kind,
    provider: slash >= 0 ? c.modelId.slice(0, slash) : 'unknown',
    model: slash >= 0 ? c.modelId.slice(slash + 1) : c.modelId,
    inputTokens: c.usage.inputTokens,
    outputTokens: c.usage.outputTokens,
    cachedInputTokens: c.usage.cachedInputTokens ?? 0,
    totalTokens: c.usage.inputTokens + c.usage.outputTokens,
    costNanos: Math.round(costUsd * NANOS),
    priced,
    priceVersion: version,
    outcome: c.outcome ?? 'ok',
    estimated: c.estimated ?? false,
    at,
    ...(c.audioMs !== undefined ? { audioMs: c.audioMs } : {}),
  };
}

/** The ledger's writes (a billed call's row, priced and counted once) and what one job's rows add up to. */
function createUsageLedger(ctx: UsageContext) {
  const { repo, counters } = ctx;
  return {
    rowOf,

    /** Writes the call's row once, priced with the table in force at the call. Returns whether it was new. */
    async record(c: BilledCall): Promise<boolean> {
      const row = rowOf(c);
      // Which invocations this row starts is decided before it is stored (a repeat gets the same answer).
      const firstOf = await counters.firstOf(row);
      if (firstOf.length) row.firstOf = firstOf;
      const fresh = await repo.insert(row, { placed: c.placed ?? true });
      // The counters add the stored row once (its marker), after the row exists: a writer that died
      // between the two is completed by its retry (the stored row is counted) or by the reconciler.
      if (fresh) await counters.count(row);
      else {
        const stored = await repo.row(row.workspaceId, row._id);
        if (stored && stored.at.getTime() > Date.now() - COUNT_RETRY_WINDOW_MS) await counters.count(stored);
      }
      return fresh;
    },

    /** What the ledger rows of these keys (one job's) add up to: key reads, no query. */
    totalsOf: async (workspaceId: string, jobId: string, keys: string[]) =>
      totalsOfRows(await repo.rowsOfJob(workspaceId, jobId, keys)),

    /**
     * What one job's provider calls cost: its own rows (delegated children are jobs of their own),
     * or with `whole` every row of the run it started (a pathway: its classify calls and its
     * neuron nodes' child jobs, by `runId`). A run has a handful of rows (one per billed call): one
     * read of them, summed here, instead of one aggregation per measure.
     */
    jobTotals: async (workspaceId: string, jobId: string, whole = false) =>
      totalsOfRows(await repo.jobRows(workspaceId, jobId, whole)),
  };
}

/** The usage figures of a window (statistics, receptor ranking): from rollups and counters, or the ledger's reference. */
function createUsageStats(ctx: UsageContext) {
  const { counters } = ctx;
  return {
    /**
     * Usage statistics over a window: `caller` limits to the credential's own calls (GET /v1/usage);
     * without it, the whole workspace (admins). Summed from rollups and counters (`groupsIn`).
     */
    async stats(scope: Scope, w: UsageWindow, caller: boolean) {
      const range = rangeOf(w);
      const narrow = narrowOf(scope, w, caller);
      // Until the workspace's counters are known complete (its `built` marker), the ledger itself.
      if (!(await counters.isBuilt(scope.workspaceId)))
        return present(
          ctx,
          scope.workspaceId,
          w,
          await facetsOfLedger(ctx, { ...windowQuery(scope.workspaceId, w), ...narrow }),
        );
      const groups = await groupsIn(ctx, scope.workspaceId, range, narrow);
      return present(ctx, scope.workspaceId, w, facetsOfGroups(groups));
    },

    /** The same statistics summed by the store over every ledger row of the window: the reference (slow; never on a request path). */
    async statsFromLedger(scope: Scope, w: UsageWindow, caller: boolean) {
      return present(
        ctx,
        scope.workspaceId,
        w,
        await facetsOfLedger(ctx, { ...windowQuery(scope.workspaceId, w), ...narrowOf(scope, w, caller) }),
      );
    },

    /** Receptors ranked by tokens, cost or invocations in the window (admins). */
    async receptorRanking(scope: Scope, w: UsageWindow, sortBy: 'tokens' | 'cost' | 'invokeCount') {
      if (!(await counters.isBuilt(scope.workspaceId)))
        return ranking(ctx, scope.workspaceId, await facetsOfLedger(ctx, windowQuery(scope.workspaceId, w)), sortBy);
      return ranking(
        ctx,
        scope.workspaceId,
        facetsOfGroups(await groupsIn(ctx, scope.workspaceId, rangeOf(w), narrowOf(scope, w, false))),
        sortBy,
      );
    },

    /** The ranking summed over every ledger row of the window: the reference. */
    async receptorRankingFromLedger(scope: Scope, w: UsageWindow, sortBy: 'tokens' | 'cost' | 'invokeCount') {
      return ranking(ctx, scope.workspaceId, await facetsOfLedger(ctx, windowQuery(scope.workspaceId, w)), sortBy);
    },

    /** The :workspace_id path segment must name the caller's own workspace (another one is a 404). */
    checkWorkspace(scope: Scope, workspaceId: string): void {
      if (workspaceId !== scope.workspaceId) throw notFound('Workspace');
    },
  };
}

/**
 * The usage ledger and every figure read from it (docs/usage.md, "Usage routes"). The ledger's
 * immutable rows are the truth; as each is written, counters are added to (src/usage/counters.ts),
 * and closed hours are stored as rollups computed from the ledger (the reconciler). The usage
 * routes sum rollups and counters, so totals, facets, job results and trace costs add up by
 * construction: `allFacetsMatchTotals` compares sums of one set of groups.
 */
export function createUsageService(d: { repo: UsageStore; counters: UsageCounters }) {
  const ctx: UsageContext = { repo: d.repo, counters: d.counters };
  return { ...createUsageLedger(ctx), ...createUsageStats(ctx) };
}
export type UsageService = ReturnType<typeof createUsageService>;
