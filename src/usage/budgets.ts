import { randomUUID } from 'node:crypto';
import { budgetKey, LEDGER_FIELD, type BudgetDoc } from './model.js';
import type { BudgetPeriod } from './budget-schemas.js';
import type { BudgetStore, LedgerQuery, Page, UsageStore } from './store.js';
import type { SpendKey, UsageCounters } from './counters.js';
import { AppError, conflict, notFound, validationError } from '../kernel/errors.js';
import type { BudgetCreateBody, BudgetListQuery, BudgetUpdateBody } from './budget-schemas.js';
import type { Scope } from '../kernel/scope.js';

const NANOS = 1e9;
/** How long a process uses a workspace's remembered budgets at most, even when their version is unchanged (a Redis that lost the version). */
const BUDGET_CACHE_TTL_MS = 60_000;
/** Workspaces whose budgets a process remembers. */
const BUDGET_CACHE_MAX = 10_000;

/** The current period of a budget: UTC calendar day or month; `total` has no bounds. */
function periodOf(period: BudgetPeriod, now: Date = new Date()): { start: Date | null; end: Date | null } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  if (period === 'day') {
    const start = new Date(Date.UTC(y, m, now.getUTCDate()));
    return { start, end: new Date(start.getTime() + 86_400_000) };
  }
  if (period === 'month') return { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
  return { start: null, end: null };
}

/** What a run's next model turn would spend, estimated before the call (its prompt; output is unknown yet). @public (in the service's signature) */
export interface TurnEstimate {
  tokens: number;
  costNanos: number;
}

/** A budget the next call would go over, as the run engine and the intervention show it. @public (in the service's signature) */
export interface BudgetOverrun {
  budgetId: string;
  scope: BudgetDoc['scope'];
  targetId: string | null;
  measure: BudgetDoc['measure'];
  period: BudgetPeriod;
  limit: number;
  spent: number;
  policy: BudgetDoc['policy'];
  /** `BUDGET_EXCEEDED: …`, the sentence a failed job or an intervention carries. */
  message: string;
}

/** What a call served, as far as budgets are concerned. @public (in the service's signature) */
export interface BudgetTargets {
  receptorId?: string | null;
  neuronId?: string | null;
  shareTokenId?: string | null;
}

const unitOf = (b: Pick<BudgetDoc, 'measure'>, v: number) =>
  b.measure === 'usd' ? `$${v.toFixed(6).replace(/\.?0+$/, '')}` : `${v} tokens`;
const describe = (b: BudgetDoc) =>
  `the ${b.scope === 'workspace' ? 'workspace' : `${b.scope.replace('_', ' ')} ${b.targetId}`} budget of ${unitOf(b, b.limit)}${b.period === 'total' ? ' in all' : ` per ${b.period}`}`;

/** What the budget service's groups share: its stores, the counters and the per-process cache of budgets (one Map). */
interface BudgetContext {
  repo: BudgetStore;
  usage: UsageStore;
  counters: UsageCounters;
  /** Workspace id → its budgets as read at a version (see `ofWorkspace`). */
  cache: Map<string, { version: string; budgets: BudgetDoc[]; at: number }>;
}

const spendKey = (b: BudgetDoc): SpendKey => ({
  workspaceId: b.workspaceId,
  scope: b.scope,
  targetId: b.targetId,
  period: b.period,
  measure: b.measure,
});

const limitRaw = (b: BudgetDoc) => (b.measure === 'usd' ? Math.round(b.limit * NANOS) : b.limit);
const toUnit = (b: BudgetDoc, raw: number) => (b.measure === 'usd' ? raw / NANOS : raw);

function overrun(b: BudgetDoc, spent: number): BudgetOverrun {
  const s = toUnit(b, spent);
  return {
    budgetId: b._id,
    scope: b.scope,
    targetId: b.targetId,
    measure: b.measure,
    period: b.period,
    limit: b.limit,
    spent: s,
    policy: b.policy,
    message: `BUDGET_EXCEEDED: ${describe(b)} would be exceeded (${unitOf(b, s)} spent${b.period === 'total' ? '' : ` this ${b.period}`})`,
  };
}

/** Reading budgets and their spending: the per-process list of a workspace's budgets, and what each has spent. */
function createBudgetReads(d: BudgetContext) {
  const { repo, counters, cache } = d;

  /** Spent in the budget's current period, in its own unit (tokens, or nano-USD for usd): its counter (the ledger's sum while the counters are not built). */
  async function spentRaw(b: BudgetDoc, now = new Date()): Promise<number> {
    const [s] = await spentOfList([b], now);
    return s;
  }

  /**
   * What budgets have spent: their counters, read in one round trip with the workspace's `built`
   * marker; while a workspace's counters are not known to be complete (after an upgrade, a Redis
   * that lost them, before the reconciler's first full rebuild), the ledger's sums.
   */
  async function spentOfList(list: BudgetDoc[], now = new Date()): Promise<number[]> {
    const fast = await counters.spentIfBuilt(list.map(spendKey), now);
    return Promise.all(fast.map((v, i) => (v !== null ? v : spentFromLedger(list[i], now))));
  }

  /** The same, summed by the store over the ledger rows of the period (the reconciler's reference; reads every row). */
  async function spentFromLedger(b: BudgetDoc, now = new Date()): Promise<number> {
    const { start, end } = periodOf(b.period, now);
    const field = LEDGER_FIELD[b.scope];
    const filter: LedgerQuery = { workspaceId: b.workspaceId, ...(field ? { [field]: b.targetId } : {}) };
    if (start) Object.assign(filter, { from: start, to: end });
    const measure = b.measure === 'usd' ? 'costNanos' : 'tokens';
    const [s] = await d.usage.sums(filter, null, [measure]);
    return s?.[measure] ?? 0;
  }

  /**
   * The workspaces' budgets, remembered per process (docs/usage.md): an entry is used while the
   * workspace's budget version in Redis (bumped by every budget write) is the one it was read
   * at, so a turn in a workspace without budgets reads one Redis key and nothing from the store.
   * Bounded (oldest entries dropped) and re-read after BUDGET_CACHE_TTL_MS whatever the version.
   */
  async function ofWorkspace(workspaceId: string): Promise<BudgetDoc[]> {
    const version = await counters.budgetVersion(workspaceId);
    const hit = cache.get(workspaceId);
    if (hit && hit.version === version && Date.now() - hit.at < BUDGET_CACHE_TTL_MS) return hit.budgets;
    const budgets = await repo.ofWorkspace(workspaceId, 1000);
    cache.delete(workspaceId);
    cache.set(workspaceId, { version, budgets, at: Date.now() });
    if (cache.size > BUDGET_CACHE_MAX) cache.delete(cache.keys().next().value!);
    return budgets;
  }
  /** After a budget write: other processes see the new version at their next check; this one forgets at once. */
  async function changed(workspaceId: string): Promise<void> {
    cache.delete(workspaceId);
    await counters.bumpBudgetVersion(workspaceId);
  }
  return { spentRaw, spentFromLedger, spentOfList, ofWorkspace, changed };
}
type BudgetReads = ReturnType<typeof createBudgetReads>;

/** The admin's budgets (POST/GET/PATCH/DELETE /v1/budgets) and a share link's lifetime token budget. */
function createBudgetAdmin(d: BudgetContext, reads: BudgetReads) {
  const { repo, counters } = d;
  const { spentRaw, changed } = reads;

  async function get(scope: Scope, id: string): Promise<BudgetDoc> {
    const b = await repo.get(scope.workspaceId, id);
    if (!b) throw notFound('Budget');
    return b;
  }

  /** The target must be a receptor, neuron or share link of the caller's workspace (another one is a 404). */
  async function checkTarget(workspaceId: string, scope: BudgetDoc['scope'], targetId: string | null): Promise<void> {
    if (scope === 'workspace') return;
    if (!(await repo.targetExists(workspaceId, scope, targetId!)))
      throw notFound(scope === 'share_token' ? 'Share token' : scope === 'receptor' ? 'Receptor' : 'Neuron');
  }

  return {
    get,

    /** The budget with what it has spent in its current period. */
    async view(b: BudgetDoc, now = new Date()) {
      const spent = toUnit(b, await spentRaw(b, now));
      return {
        doc: b,
        spent,
        remaining: Math.max(0, b.limit - spent),
        exceeded: spent >= b.limit,
        period: periodOf(b.period, now),
      };
    },

    /** POST /v1/budgets: one budget per target, measure and period (409 for a second). */
    async create(scope: Scope, body: BudgetCreateBody): Promise<BudgetDoc> {
      const targetId = body.scope === 'workspace' ? null : body.target_id!.toLowerCase();
      await checkTarget(scope.workspaceId, body.scope, targetId);
      const now = new Date();
      const doc: BudgetDoc = {
        _id: randomUUID(),
        workspaceId: scope.workspaceId,
        key: budgetKey(scope.workspaceId, body.scope, targetId, body.measure, body.period),
        scope: body.scope,
        targetId,
        measure: body.measure,
        period: body.period,
        limit: body.limit,
        policy: body.policy,
        name: body.name ?? null,
        createdBy: scope.userId ?? scope.apiKeyId,
        createdAt: now,
        updatedAt: now,
      };
      if (!(await repo.create(doc)))
        throw conflict(
          `This ${body.scope} already has a ${body.measure} budget per ${body.period}: change it (PATCH /v1/budgets/:id)`,
        );
      await changed(scope.workspaceId);
      return doc;
    },

    async list(scope: Scope, q: BudgetListQuery): Promise<Page<BudgetDoc>> {
      const filter: { scope?: BudgetDoc['scope']; targetId?: string } = {};
      if (q.scope) filter.scope = q.scope;
      if (q.target_id) filter.targetId = q.target_id.toLowerCase();
      return repo.page(scope.workspaceId, filter, q);
    },

    async update(scope: Scope, id: string, body: BudgetUpdateBody): Promise<BudgetDoc> {
      const b = await get(scope, id);
      if (body.limit !== undefined && b.measure === 'tokens' && !Number.isInteger(body.limit))
        throw validationError('limit: a token limit must be a whole number');
      const set: Partial<BudgetDoc> = { updatedAt: new Date() };
      if (body.limit !== undefined) set.limit = body.limit;
      if (body.policy !== undefined) set.policy = body.policy;
      if (body.name !== undefined) set.name = body.name;
      await repo.update(scope.workspaceId, b._id, set);
      await changed(scope.workspaceId);
      return { ...b, ...set };
    },

    async remove(scope: Scope, id: string): Promise<void> {
      if (!(await repo.remove(scope.workspaceId, id))) throw notFound('Budget');
      await changed(scope.workspaceId);
    },

    /**
     * A share link's `max_tokens` (docs/shares.md) is this link's lifetime token budget with the
     * fail policy: the same budget an admin sees and changes under /v1/budgets. null removes it.
     */
    async setShareTokens(
      workspaceId: string,
      shareTokenId: string,
      maxTokens: number | null,
      by: string | null,
    ): Promise<void> {
      const key = budgetKey(workspaceId, 'share_token', shareTokenId, 'tokens', 'total');
      if (maxTokens === null) {
        await repo.removeByKey(workspaceId, key);
        await changed(workspaceId);
        return;
      }
      const now = new Date();
      const cur = await repo.byKey(workspaceId, key);
      if (cur) {
        await repo.update(workspaceId, cur._id, { limit: maxTokens, updatedAt: now });
        await changed(workspaceId);
        return;
      }
      const doc: BudgetDoc = {
        _id: randomUUID(),
        workspaceId,
        key,
        scope: 'share_token',
        targetId: shareTokenId,
        measure: 'tokens',
        period: 'total',
        limit: maxTokens,
        policy: 'fail',
        name: 'share link',
        createdBy: by,
        createdAt: now,
        updatedAt: now,
      };
      // A budget of that key written meanwhile (a racing call) is the one kept.
      await repo.create(doc);
      await changed(workspaceId);
    },

    /** The link's lifetime token budget and what its runs spent (the share view's max_tokens and used_tokens). */
    async shareTokens(workspaceId: string, shareTokenId: string): Promise<{ maxTokens: number | null; used: number }> {
      const key: SpendKey = {
        workspaceId,
        scope: 'share_token',
        targetId: shareTokenId,
        period: 'total',
        measure: 'tokens',
      };
      const [b, [fast]] = await Promise.all([
        repo.byKey(workspaceId, budgetKey(workspaceId, 'share_token', shareTokenId, 'tokens', 'total')),
        counters.spentIfBuilt([key]),
      ]);
      if (fast !== null) return { maxTokens: b?.limit ?? null, used: fast };
      const [s] = await d.usage.sums({ workspaceId, shareTokenId }, null, ['tokens']);
      return { maxTokens: b?.limit ?? null, used: s?.tokens ?? 0 };
    },

    /** Removes the budgets of a deleted target (a revoked share link). */
    async dropFor(workspaceId: string, scope: BudgetDoc['scope'], targetId: string): Promise<void> {
      await repo.removeFor(workspaceId, scope, targetId);
      await changed(workspaceId);
    },
  };
}

/** The run engine's checks before a model call (and the share link's door): which budgets cover it, spent or not. */
function createBudgetChecks(reads: BudgetReads) {
  const { ofWorkspace, spentFromLedger, spentOfList } = reads;
  return {
    /** The budgets that cover a call, less those an admin already let this run go beyond (remembered: see `ofWorkspace`). */
    async applicable(
      workspaceId: string,
      targets: BudgetTargets,
      approved: readonly string[] = [],
    ): Promise<BudgetDoc[]> {
      return this.covering(await ofWorkspace(workspaceId), targets, approved);
    },

    /** Every budget of the workspace (read before the call's attribution is known; see `covering`), remembered per process. */
    ofWorkspace,

    spentFromLedger,

    /** Of a workspace's budgets, those that cover a call with these targets, less the approved ones. */
    covering(all: BudgetDoc[], targets: BudgetTargets, approved: readonly string[] = []): BudgetDoc[] {
      const ids: Record<BudgetDoc['scope'], string | null | undefined> = {
        workspace: null,
        receptor: targets.receptorId,
        neuron: targets.neuronId,
        share_token: targets.shareTokenId,
      };
      return all.filter(
        (b) =>
          !approved.includes(b._id) &&
          (b.scope === 'workspace' || (ids[b.scope] != null && ids[b.scope] === b.targetId)),
      );
    },

    /** What each budget has spent in its current period (raw: tokens or nano-USD), read before the call's size is known: one read of their counters, none without budgets. */
    async spentOf(list: BudgetDoc[], now = new Date()): Promise<{ budget: BudgetDoc; spent: number }[]> {
      const spent = await spentOfList(list, now);
      return list.map((budget, i) => ({ budget, spent: spent[i] }));
    },

    /**
     * The run engine's decision before a model call: the first budget (fail policy before pause)
     * that is spent, or that this call's estimated prompt would take over its limit.
     */
    judge(spent: { budget: BudgetDoc; spent: number }[], estimate: TurnEstimate): BudgetOverrun | null {
      const over = spent
        .filter(
          ({ budget: b, spent: s }) =>
            s >= limitRaw(b) || s + (b.measure === 'usd' ? estimate.costNanos : estimate.tokens) > limitRaw(b),
        )
        .map(({ budget: b, spent: s }) => overrun(b, s));
      return over.find((o) => o.policy === 'fail') ?? over[0] ?? null;
    },

    /** spentOf + judge: one read of the applicable budgets' counters; none at all when no budget applies. */
    async evaluate(applicable: BudgetDoc[], estimate: TurnEstimate, now = new Date()): Promise<BudgetOverrun | null> {
      if (applicable.length === 0) return null;
      return this.judge(await this.spentOf(applicable, now), estimate);
    },

    /**
     * At the door of a share link: a budget with the fail policy that is already spent refuses the
     * request (402), rather than starting a run that fails at its first turn.
     */
    async refuseIfSpent(workspaceId: string, targets: BudgetTargets): Promise<void> {
      const failing = this.covering(await ofWorkspace(workspaceId), targets).filter((b) => b.policy === 'fail');
      for (const { budget: b, spent: s } of await this.spentOf(failing)) {
        if (s >= limitRaw(b))
          throw new AppError('BUDGET_EXCEEDED', 402, `${describe(b)} is spent (${unitOf(b, toUnit(b, s))} used)`);
      }
    },
  };
}

/**
 * Budgets (docs/usage.md): an admin caps tokens or USD per day, month or in all, on the workspace,
 * a receptor, a neuron or a share link. Spending is summed by the database from the usage ledger
 * (the same rows every usage figure is made of) whenever a budget is read or checked; the run
 * engine checks before each model turn, so a run stops between turns, never in the middle of one.
 */
export function createBudgetService(d: { repo: BudgetStore; usage: UsageStore; counters: UsageCounters }) {
  const ctx: BudgetContext = { ...d, cache: new Map() };
  const reads = createBudgetReads(ctx);
  return { ...createBudgetAdmin(ctx, reads), ...createBudgetChecks(reads) };
}
export type BudgetService = ReturnType<typeof createBudgetService>;
