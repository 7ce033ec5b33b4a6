import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { BudgetScope } from './budget-schemas.js';
import type { InvokeFacet, UsageRowDoc, UsageSums } from './groups.js';
import type { BudgetDoc, UsageCumulative, UsageRollup } from './model.js';

export type { Page } from '../kernel/store/paging.js';

/** Row fields a ledger read may match on exactly (the caller, a receptor, a budget's target, unpriced rows). */
export type LedgerMatch = Partial<
  Pick<UsageRowDoc, 'userId' | 'apiKeyId' | 'receptorId' | 'neuronId' | 'pathwayId' | 'shareTokenId' | 'priced'>
>;
/** Ledger rows of a workspace written in [from, to) (null or absent: unbounded) that match the given fields. */
export interface LedgerQuery extends LedgerMatch {
  workspaceId: string;
  from?: Date | null;
  to?: Date | null;
}
/** What a sum adds up: a field of the rows, or (`rows`) 1 per row. */
export type Measure = keyof UsageSums;

/**
 * What the usage service, counters, reconciler and budgets ask of the ledger's store, in domain
 * terms (store.mongo.ts is the MongoDB and FerretDB adapter): the immutable rows, each job's places,
 * the hour and cumulative rollups, sums and counts computed by the store. Every read and write of
 * a tenant's rows takes the workspace.
 */
export interface UsageStore {
  /** The row ids a job's places name, in order (probed by key from 1 until a miss). */
  placedRows(jobId: string): Promise<string[]>;
  /** One ledger row of the workspace, or null. */
  row(workspaceId: string, id: string): Promise<UsageRowDoc | null>;
  /** The job's rows of these keys (key reads); keys without a row are left out. */
  rowsOfJob(workspaceId: string, jobId: string, keys: string[]): Promise<UsageRowDoc[]>;
  /** A job's rows (through its places, or by query for a job from before places); `whole`: every row of the run it started, token and cost fields only when by query. */
  jobRows(workspaceId: string, jobId: string, whole?: boolean): Promise<UsageRowDoc[]>;
  /** The cumulative rollup through epoch day `day` (a key read), or null. */
  cumulativeThrough(workspaceId: string, day: number): Promise<UsageCumulative | null>;
  /** The cumulative rollups of days in [from, to) (epoch days). */
  cumulativeBetween(workspaceId: string, from: number, to: number): Promise<UsageCumulative[]>;
  /** The rows of a workspace written in [from, to) (null: unbounded), with `narrow` (the caller, a receptor) applied by the store. */
  rowsBetween(workspaceId: string, from: Date | null, to: Date | null, narrow?: LedgerMatch): Promise<UsageRowDoc[]>;
  /** The stored rollups of a workspace's hours in [from, to) (epoch hours; null: unbounded). */
  rollupsBetween(workspaceId: string, from: number | null, to: number | null): Promise<UsageRollup[]>;
  /** Stores an hour's rollup once (claimed by its `_id`); false when it is stored already. */
  storeRollup(r: UsageRollup): Promise<boolean>;
  /** Rewrites a stored hour rollup (the reconciler, one run at a time, is its only writer after the claim). */
  correctRollup(r: UsageRollup): Promise<void>;
  /** Stores a day's cumulative rollup once; false when it is stored already. */
  storeCumulative(c: UsageCumulative): Promise<boolean>;
  /** Rewrites a stored cumulative rollup (a day before it was corrected). */
  correctCumulative(c: UsageCumulative): Promise<void>;
  /** Records which invocations rows stored without `firstOf` start (the reconciler's decision, by row id). */
  setFirstOf(workspaceId: string, decided: Map<string, InvokeFacet[]>): Promise<void>;
  /** How many ledger rows of the workspace were written before `to` (the reconciler's completeness check). */
  countBefore(workspaceId: string, to: Date): Promise<number>;
  /** Inserts the row once (a repeat of the same key is a no-op: returns false), its job's place first unless `placed: false`. */
  insert(row: UsageRowDoc, opts?: { placed?: boolean }): Promise<boolean>;
  /** Sums of the matching rows grouped by `field` (null: one group of all rows), computed by the store; unasked measures read 0. */
  sums(
    q: LedgerQuery,
    field: keyof UsageRowDoc | null,
    measures?: Measure[],
  ): Promise<(UsageSums & { key: string | null })[]>;
  /** Distinct runs per value of `field`, counted by the store: `per` jobId (a neuron's own runs) or runId (a receptor's or pathway's runs). */
  jobsPer(
    q: LedgerQuery,
    field: 'receptorId' | 'neuronId' | 'pathwayId',
    per?: 'jobId' | 'runId',
  ): Promise<Map<string, number>>;
  /** The names of a facet's resources of the workspace by id (a receptor's slug and target kind, a neuron's or pathway's name); ids without one are left out. */
  resourceNames(
    facet: InvokeFacet,
    workspaceId: string,
    ids: string[],
  ): Promise<Map<string, { slug: string; subtype: string }>>;
}

/**
 * What the budget service and the reconciler ask of the budgets' store (budgets.mongo.ts is the
 * MongoDB and FerretDB adapter). Every operation takes the workspace; spending is not stored here
 * but summed from the ledger.
 */
export interface BudgetStore {
  /** One budget of the workspace, or null. */
  get(workspaceId: string, id: string): Promise<BudgetDoc | null>;
  /** The workspace's budgets (at most `limit`). */
  ofWorkspace(workspaceId: string, limit?: number): Promise<BudgetDoc[]>;
  /** The budget of this key (its target and terms), or null. */
  byKey(workspaceId: string, key: string): Promise<BudgetDoc | null>;
  /** Creates the budget; false when its target already has one of these terms (the unique key). */
  create(doc: BudgetDoc): Promise<boolean>;
  /** A page of the workspace's budgets (of a scope, of a target), oldest first. */
  page(workspaceId: string, f: { scope?: BudgetScope; targetId?: string }, q: PageQuery): Promise<Page<BudgetDoc>>;
  /** Changes the given fields of one budget of the workspace (none when it has none of that id). */
  update(workspaceId: string, id: string, set: Partial<BudgetDoc>): Promise<void>;
  /** Removes one budget; false when the workspace has none of that id. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** Removes the budget of this key, if there is one. */
  removeByKey(workspaceId: string, key: string): Promise<void>;
  /** Removes the budgets of a target (a revoked share link). */
  removeFor(workspaceId: string, scope: BudgetScope, targetId: string): Promise<void>;
  /** Whether the target of a budget (a receptor, a live neuron, a share link) is the workspace's. */
  targetExists(workspaceId: string, scope: Exclude<BudgetScope, 'workspace'>, id: string): Promise<boolean>;
}
