import type { Blob } from '../kernel/store/codec.js';
// What a budget caps, measures, over which period and with which policy: the request schemas' types (docs/usage.md).
import type { BudgetMeasure, BudgetPeriod, BudgetPolicy, BudgetScope } from './budget-schemas.js';
import type { UsageAttribution, UsageGroup } from './groups.js';

// The ledger row itself (UsageRowDoc), its attribution and the groups rollups are made of are in groups.ts.

/** Epoch hour of a time (hours since 1970-01-01T00Z): the rollups' unit. */
export const HOUR_MS = 3_600_000;
export const hourOf = (t: Date | number): number => Math.floor((typeof t === 'number' ? t : t.getTime()) / HOUR_MS);

/**
 * The rollup of one closed hour of a workspace (`usage_rollups`), computed from the ledger rows of
 * that hour once it is closed (plus a grace period), and claimed by unique `_id` =
 * `<workspace>:<epoch hour>`: written once, never contended (only the reconciler corrects one).
 * An hour without rows has none.
 */
export interface UsageRollupDoc {
  _id: string;
  workspaceId: string;
  hour: Date;
  /**
   * The hour's groups as one JSON string (`UsageGroup[]`): FerretDB decodes a document field by
   * field, and a dozen groups of eighteen fields per hour made a month's read several times slower
   * than one string per hour. Nothing filters inside it.
   */
  groups: Blob;
  rows: number;
  computedAt: Date;
}
/** A stored hour rollup as services see it: its groups decoded. */
export interface UsageRollup extends Omit<UsageRollupDoc, 'groups'> {
  groups: UsageGroup[];
}
export const rollupId = (workspaceId: string, hour: number): string => `${workspaceId}:${hour}`;

/** Hours in a UTC day (epoch days are epoch hours ÷ 24). */
export const DAY_H = 24;

/**
 * Everything a workspace was billed through one closed UTC day (`usage_cumulative`, `_id` =
 * `<workspace>:c<epoch day>`): the previous day's cumulative rollup plus that day's hour rollups,
 * kept by the reconciler. The whole days of any window are two key reads, through(last day) −
 * through(the day before the first), and a window without a start one; a day's own figures are
 * through(d) − through(d − 1). A chain of them starts at `chainFrom` with a base: the document of the
 * day before, everything billed before `chainFrom` summed from the ledger.
 */
export interface UsageCumulativeDoc {
  _id: string;
  workspaceId: string;
  day: Date;
  chainFrom: number;
  groups: Blob;
  rows: number;
  computedAt: Date;
}
export const cumulativeId = (workspaceId: string, day: number): string => `${workspaceId}:c${day}`;
/** A stored cumulative rollup as services see it: its groups decoded. */
export interface UsageCumulative extends Omit<UsageCumulativeDoc, 'groups'> {
  groups: UsageGroup[];
}

/**
 * Where a job's ledger rows are found by key: `_id` = `<jobId>:<n>` for n = 1, 2, … (FerretDB's
 * SQLite backend scans the whole ledger for `{ workspaceId, jobId }`, and the ledger grows with
 * every run). A place is claimed before its row is inserted, so a row always has one; a place
 * whose row was never written (the writer died between the two) names no row and counts nothing.
 */
export interface JobRowPlaceDoc {
  _id: string;
  rowId: string;
}

/**
 * A spending cap. Spending is never stored here: it is summed from the usage ledger for the
 * current period whenever it is read or checked, so the budget and GET /v1/usage agree by
 * construction. `key` names the budget's target and terms, so one target has at most one budget
 * per measure and period (a unique index).
 */
export interface BudgetDoc {
  _id: string;
  workspaceId: string;
  key: string;
  scope: BudgetScope;
  /** The receptor, neuron or share link id; null for the workspace. */
  targetId: string | null;
  measure: BudgetMeasure;
  period: BudgetPeriod;
  /** Tokens (an integer) or USD. */
  limit: number;
  policy: BudgetPolicy;
  name: string | null;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const budgetKey = (
  workspaceId: string,
  scope: BudgetScope,
  targetId: string | null,
  measure: BudgetMeasure,
  period: BudgetPeriod,
) => `${workspaceId}:${scope}:${targetId ?? '-'}:${measure}:${period}`;

/** The usage-ledger field each scope filters on (workspace: none, every row of the workspace counts). */
export const LEDGER_FIELD = {
  workspace: null,
  receptor: 'receptorId',
  neuron: 'neuronId',
  share_token: 'shareTokenId',
} as const satisfies Record<BudgetScope, keyof UsageAttribution | null>;
