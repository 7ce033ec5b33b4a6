import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { UsageAttribution } from './usage.js';
import { findById } from './client.js';
import { pageIndexes } from './paging.js';

/** What a budget caps (docs/usage.md): the whole workspace, or the calls made for one receptor, neuron or share link. */
export type BudgetScope = 'workspace' | 'receptor' | 'neuron' | 'share_token';
export type BudgetMeasure = 'tokens' | 'usd';
/** Calendar periods in UTC; `total` never resets (a share link's lifetime token budget). */
export type BudgetPeriod = 'day' | 'month' | 'total';
/** What happens to a run whose next model turn would go over: wait for an admin's approval, or fail. */
export type BudgetPolicy = 'pause' | 'fail';

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

export const budgetIndexes: IndexSpec[] = [
  { collection: 'budgets', keys: { key: 1 }, unique: true, name: 'key_unique' },
  { collection: 'budgets', keys: { workspaceId: 1, scope: 1, targetId: 1 }, name: 'ws_scope_target' },
  // GET /v1/budgets pages by (createdAt, _id), oldest first (src/db/paging.ts).
  ...pageIndexes('budgets', ['workspaceId'], ['createdAt']),
  ...pageIndexes('budgets', ['workspaceId', 'scope'], ['createdAt']),
  ...pageIndexes('budgets', ['workspaceId', 'scope', 'targetId'], ['createdAt']),
];

export function createBudgetRepo(db: Db) {
  const budgets = db.collection<BudgetDoc>('budgets');
  return {
    budgets,
    find: (workspaceId: string, id: string) => findById(budgets, id, { workspaceId }),
    /** The budgets that apply to a call with this attribution (the workspace's, and its receptor's, neuron's and link's). */
    forCall(
      workspaceId: string,
      a: { receptorId?: string | null; neuronId?: string | null; shareTokenId?: string | null },
    ) {
      const or: Record<string, unknown>[] = [{ scope: 'workspace' }];
      if (a.receptorId) or.push({ scope: 'receptor', targetId: a.receptorId });
      if (a.neuronId) or.push({ scope: 'neuron', targetId: a.neuronId });
      if (a.shareTokenId) or.push({ scope: 'share_token', targetId: a.shareTokenId });
      return budgets.find({ workspaceId, $or: or }).toArray();
    },
  };
}
export type BudgetRepo = ReturnType<typeof createBudgetRepo>;
