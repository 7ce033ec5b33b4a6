import type { Filter } from 'mongodb';
import { findById } from '../db/client.js';
import type { NeuronRepo } from '../db/neurons.js';
import type { PathwayRepo } from '../db/pathways.js';
import type { ReceptorRepo } from '../db/receptors.js';
import type { Measure, UsageAttribution, UsageRepo, UsageRowDoc, UsageSums } from '../db/usage.js';
import { notFound, validationError } from '../errors.js';
import { costOf, costOfAudio, pricesAt } from '../llm/pricing.js';
import type { TokenUsage } from '../llm/types.js';
import type { Scope } from '../scope.js';

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

export interface UsageWindow { startDate?: string; endDate?: string; receptorId?: string }
export type ResourceFacet = 'receptor' | 'neuron' | 'pathway';
const FACET_FIELD = { receptor: 'receptorId', neuron: 'neuronId', pathway: 'pathwayId' } as const;

const usd = (nanos: number) => nanos / 1e9;
const NANOS = 1e9;

/**
 * The usage ledger and every figure read from it (document 2, Usage statistics). Each figure is
 * a database aggregation over the same immutable rows, so totals, facets, job results and trace
 * costs add up by construction: `allFacetsMatchTotals` compares sums of one set of rows.
 */
export function createUsageService(d: { repo: UsageRepo; receptors: ReceptorRepo; neurons: NeuronRepo; pathways: PathwayRepo }) {
  const { repo } = d;

  function windowFilter(workspaceId: string, w: UsageWindow): Filter<UsageRowDoc> {
    const from = w.startDate ? new Date(w.startDate) : undefined;
    const to = w.endDate ? new Date(w.endDate) : undefined;
    if (from && to && from > to) throw validationError('startDate must not be after endDate');
    // endDate is inclusive: a date alone (2026-01-31) covers that whole UTC day.
    const dayOnly = w.endDate !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(w.endDate);
    const filter: Filter<UsageRowDoc> = { workspaceId };
    if (from || to) {
      filter.at = { ...(from ? { $gte: from } : {}), ...(to ? (dayOnly ? { $lt: new Date(to.getTime() + 86_400_000) } : { $lte: to }) : {}) };
    }
    if (w.receptorId) filter.receptorId = w.receptorId;
    return filter;
  }

  async function names(facet: ResourceFacet, workspaceId: string, ids: string[]): Promise<Map<string, { slug: string; subtype: string }>> {
    const out = new Map<string, { slug: string; subtype: string }>();
    if (ids.length === 0) return out;
    if (facet === 'receptor') {
      for (const r of await d.receptors.receptors.find({ workspaceId, _id: { $in: ids } }).toArray()) out.set(r._id, { slug: r.slug, subtype: r.executableTarget?.kind ?? 'receptor' });
    } else if (facet === 'neuron') {
      for (const n of await d.neurons.neurons.find({ workspaceId, _id: { $in: ids } }).toArray()) out.set(n._id, { slug: n.name, subtype: 'neuron' });
    } else {
      for (const p of await d.pathways.pathways.find({ workspaceId, _id: { $in: ids } }, { projection: { versions: 0 } }).toArray()) out.set(p._id, { slug: p.name, subtype: 'pathway' });
    }
    return out;
  }

  async function byResource(facet: ResourceFacet, filter: Filter<UsageRowDoc>, workspaceId: string, groups: (UsageSums & { key: string | null })[]) {
    const attributed = groups.filter((g) => g.key !== null);
    const [invokes, named] = await Promise.all([repo.jobsPer(filter, FACET_FIELD[facet], facet === 'neuron' ? 'jobId' : 'runId'), names(facet, workspaceId, attributed.map((g) => g.key!))]);
    return Object.fromEntries(attributed.map((g) => [g.key!, {
      resourceId: g.key!, slug: named.get(g.key!)?.slug ?? null, subtype: named.get(g.key!)?.subtype ?? facet,
      tokens: g.tokens, cost: usd(g.costNanos), invokeCount: invokes.get(g.key!) ?? 0,
      inputTokens: g.inputTokens, outputTokens: g.outputTokens, cachedInputTokens: g.cachedInputTokens,
    }]));
  }

  return {
    /** Writes the call's row once, priced with the table in force at the call. Returns whether it was new. */
    async record(c: BilledCall): Promise<boolean> {
      const at = c.at ?? new Date();
      const { version, prices, audio } = pricesAt(at);
      const { costUsd, priced } = c.kind === 'transcription' ? costOfAudio(c.modelId, c.audioMs ?? 0, audio) : costOf(c.modelId, c.usage, prices);
      const slash = c.modelId.indexOf('/');
      return repo.insert({
        _id: c.key, workspaceId: c.workspaceId, ...c.attribution, runId: c.attribution.runId ?? c.attribution.jobId, kind: c.kind,
        provider: slash >= 0 ? c.modelId.slice(0, slash) : 'unknown', model: slash >= 0 ? c.modelId.slice(slash + 1) : c.modelId,
        inputTokens: c.usage.inputTokens, outputTokens: c.usage.outputTokens, cachedInputTokens: c.usage.cachedInputTokens ?? 0,
        totalTokens: c.usage.inputTokens + c.usage.outputTokens, costNanos: Math.round(costUsd * NANOS), priced, priceVersion: version,
        outcome: c.outcome ?? 'ok', estimated: c.estimated ?? false, at, ...(c.audioMs !== undefined ? { audioMs: c.audioMs } : {}),
      }, { placed: c.placed ?? true });
    },

    /** What the ledger rows of these keys (one job's) add up to: key reads, no query. */
    async totalsOf(workspaceId: string, jobId: string, keys: string[]) {
      const rows = (await Promise.all(keys.map((id) => findById(repo.rows, id, { workspaceId, jobId })))).filter((r): r is UsageRowDoc => r !== null);
      const sum = (f: (r: UsageRowDoc) => number) => rows.reduce((n, r) => n + f(r), 0);
      return {
        inputTokens: sum((r) => r.inputTokens), outputTokens: sum((r) => r.outputTokens), totalTokens: sum((r) => r.totalTokens),
        costUsd: usd(sum((r) => r.costNanos)), calls: rows.length,
      };
    },

    /**
     * What one job's provider calls cost: its own rows (delegated children are jobs of their own),
     * or with `whole` every row of the run it started (a pathway: its classify calls and its
     * neuron nodes' child jobs, by `runId`).
     */
    async jobTotals(workspaceId: string, jobId: string, whole = false) {
      // A run has a handful of rows (one per billed call): one read of them, summed here, instead
      // of one aggregation per measure (FerretDB computes a single accumulator per $group).
      // A job's own rows by key through its places; a run's rows (and a job from before places) by query.
      const placed = whole ? [] : [...new Set(await repo.placedRows(jobId))];
      const rows = placed.length
        ? (await Promise.all(placed.map((id) => findById(repo.rows, id, { workspaceId, jobId })))).filter((r): r is UsageRowDoc => r !== null)
        : await repo.rows.find(whole ? { workspaceId, runId: jobId } : { workspaceId, jobId }, {
          projection: { inputTokens: 1, outputTokens: 1, totalTokens: 1, costNanos: 1 },
        }).toArray();
      const sum = (f: (r: UsageRowDoc) => number) => rows.reduce((n, r) => n + f(r), 0);
      return {
        inputTokens: sum((r) => r.inputTokens), outputTokens: sum((r) => r.outputTokens), totalTokens: sum((r) => r.totalTokens),
        costUsd: usd(sum((r) => r.costNanos)), calls: rows.length,
      };
    },

    /**
     * Usage statistics over a window: `caller` limits to the credential's own calls (GET /v1/usage);
     * without it, the whole workspace (admins).
     */
    async stats(scope: Scope, w: UsageWindow, caller: boolean) {
      const filter = windowFilter(scope.workspaceId, w);
      if (caller) {
        if (scope.userId) filter.userId = scope.userId;
        else if (scope.apiKeyId) filter.apiKeyId = scope.apiKeyId;
        else throw validationError('usage for the caller needs a user or API key credential');
      }
      const spend: Measure[] = ['tokens', 'costNanos'];
      const perResource: Measure[] = ['tokens', 'costNanos', 'inputTokens', 'outputTokens', 'cachedInputTokens'];
      const [total, provider, model, unpriced, receptor, neuron, pathway] = await Promise.all([
        repo.sums(filter, null), repo.sums(filter, 'provider', spend), repo.sums(filter, 'model', spend), repo.sums({ ...filter, priced: false }, 'model', ['rows']),
        repo.sums(filter, 'receptorId', perResource), repo.sums(filter, 'neuronId', perResource), repo.sums(filter, 'pathwayId', perResource),
      ]);
      const t = total[0] ?? { tokens: 0, costNanos: 0, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, rows: 0 };
      const unpricedModels = new Set(unpriced.map((u) => u.key));
      const facetSum = (groups: (UsageSums & { key: string | null })[], attributedOnly = false) => {
        const g = attributedOnly ? groups.filter((x) => x.key !== null) : groups;
        return { tokens: g.reduce((a, x) => a + x.tokens, 0), nanos: g.reduce((a, x) => a + x.costNanos, 0) };
      };
      const integrityOf = (groups: (UsageSums & { key: string | null })[], withUnattributed: boolean) => {
        const all = facetSum(groups);
        const attributed = facetSum(groups, true);
        return {
          tokens: attributed.tokens, cost: usd(attributed.nanos),
          ...(withUnattributed ? { unattributedTokens: all.tokens - attributed.tokens, unattributedCost: usd(all.nanos - attributed.nanos) } : {}),
          matchesTotals: all.tokens === t.tokens && all.nanos === t.costNanos,
        };
      };
      const integrity = {
        totalTokens: t.tokens, totalCost: usd(t.costNanos),
        provider: integrityOf(provider, false), model: integrityOf(model, false),
        receptor: integrityOf(receptor, true), neuron: integrityOf(neuron, true), pathway: integrityOf(pathway, true),
      };
      const [receptors, neurons, pathways] = await Promise.all([
        byResource('receptor', filter, scope.workspaceId, receptor), byResource('neuron', filter, scope.workspaceId, neuron), byResource('pathway', filter, scope.workspaceId, pathway),
      ]);
      return {
        startDate: w.startDate ?? null, endDate: w.endDate ?? null,
        totalTokens: t.tokens, totalCost: usd(t.costNanos), inputTokens: t.inputTokens, outputTokens: t.outputTokens, cachedInputTokens: t.cachedInputTokens, calls: t.rows,
        usageByProvider: Object.fromEntries(provider.map((g) => [g.key ?? 'unknown', { tokens: g.tokens, cost: usd(g.costNanos) }])),
        usageByModel: Object.fromEntries(model.map((g) => [g.key ?? 'unknown', { tokens: g.tokens, cost: usd(g.costNanos), priced: !unpricedModels.has(g.key) }])),
        usageByResource: { receptor: receptors, neuron: neurons, pathway: pathways },
        usageRollupIntegrity: {
          ...integrity,
          allFacetsMatchTotals: [integrity.provider, integrity.model, integrity.receptor, integrity.neuron, integrity.pathway].every((f) => f.matchesTotals),
        },
      };
    },

    /** Receptors ranked by tokens, cost or invocations in the window (admins). */
    async receptorRanking(scope: Scope, w: UsageWindow, sortBy: 'tokens' | 'cost' | 'invokeCount') {
      const filter = windowFilter(scope.workspaceId, w);
      const groups = await repo.sums(filter, 'receptorId', ['tokens', 'costNanos', 'inputTokens', 'outputTokens', 'cachedInputTokens']);
      const rows = Object.values(await byResource('receptor', filter, scope.workspaceId, groups));
      rows.sort((a, b) => b[sortBy] - a[sortBy] || a.resourceId.localeCompare(b.resourceId));
      return rows.map((r) => ({ receptorId: r.resourceId, receptorSlug: r.slug, receptorType: r.subtype, tokens: r.tokens, cost: r.cost, invokeCount: r.invokeCount }));
    },

    /** The :workspace_id path segment must name the caller's own workspace (another one is a 404). */
    checkWorkspace(scope: Scope, workspaceId: string): void {
      if (workspaceId !== scope.workspaceId) throw notFound('Workspace');
    },
  };
}
export type UsageService = ReturnType<typeof createUsageService>;
