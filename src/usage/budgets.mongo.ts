import type { Db, Document, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { claim } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import type { BudgetScope } from './budget-schemas.js';
import type { BudgetDoc } from './model.js';
import type { BudgetStore } from './store.js';

export const budgetIndexes: IndexSpec[] = [
  { collection: 'budgets', keys: { key: 1 }, unique: true, name: 'key_unique' },
  { collection: 'budgets', keys: { workspaceId: 1, scope: 1, targetId: 1 }, name: 'ws_scope_target' },
  // GET /v1/budgets pages by (createdAt, _id), oldest first (src/kernel/store/paging.ts).
  ...pageIndexes('budgets', ['workspaceId'], ['createdAt']),
  ...pageIndexes('budgets', ['workspaceId', 'scope'], ['createdAt']),
  ...pageIndexes('budgets', ['workspaceId', 'scope', 'targetId'], ['createdAt']),
];

/** The collection each budget target lives in (a target is checked to be the workspace's). */
const TARGETS = { receptor: 'receptors', neuron: 'neurons', share_token: 'share_tokens' } as const;

/** The budgets' store on MongoDB (and FerretDB): one budget per key (a unique index), every operation scoped to the workspace. */
export function createBudgetRepo(db: Db): BudgetStore {
  const budgets = db.collection<BudgetDoc>('budgets');
  return {
    get: (workspaceId: string, id: string): Promise<BudgetDoc | null> => findById(budgets, id, { workspaceId }),
    /** The workspace's budgets (at most `limit`). */
    ofWorkspace: (workspaceId: string, limit?: number): Promise<BudgetDoc[]> =>
      budgets
        .find({ workspaceId })
        .limit(limit ?? 0)
        .toArray(),
    /** The budget of this key (its target and terms), or null. */
    byKey: (workspaceId: string, key: string): Promise<BudgetDoc | null> => budgets.findOne({ key, workspaceId }),
    /** Creates the budget; false when its target already has one of these terms (the unique key). */
    create: (doc: BudgetDoc): Promise<boolean> => claim(budgets, doc),
    /** A page of the workspace's budgets, oldest first. */
    page: (
      workspaceId: string,
      f: { scope?: BudgetScope; targetId?: string },
      q: PageQuery,
    ): Promise<Page<BudgetDoc>> => page(budgets, { workspaceId, ...f }, { field: 'createdAt', dir: 1 }, q),
    update: async (workspaceId: string, id: string, set: Partial<BudgetDoc>): Promise<void> => {
      await budgets.updateOne({ _id: id, workspaceId }, { $set: set });
    },
    /** Removes one budget; false when the workspace has none of that id. */
    remove: async (workspaceId: string, id: string): Promise<boolean> =>
      (await budgets.deleteOne({ _id: id, workspaceId })).deletedCount === 1,
    removeByKey: async (workspaceId: string, key: string): Promise<void> => {
      await budgets.deleteOne({ key, workspaceId });
    },
    /** Removes the budgets of a target (a revoked share link). */
    removeFor: async (workspaceId: string, scope: BudgetScope, targetId: string): Promise<void> => {
      await budgets.deleteMany({ workspaceId, scope, targetId });
    },
    /** Whether the target of a budget (a receptor, a live neuron, a share link) is the workspace's. */
    async targetExists(workspaceId: string, scope: Exclude<BudgetScope, 'workspace'>, id: string): Promise<boolean> {
      const where: Filter<Document> = {
        _id: id as never,
        workspaceId,
        ...(scope === 'neuron' ? { deletedAt: null } : {}),
      };
      return (await db.collection(TARGETS[scope]).findOne(where, { projection: { _id: 1 } })) !== null;
    },
  };
}
