import type { Db, Filter } from 'mongodb';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { page, type Page, type PageQuery } from '../kernel/store/paging.js';
import { searchReader } from '../kernel/store/rows.js';
import type {
  ActionPlan,
  ActionPlanDoc,
  BindingChange,
  BindingListWhere,
  ChannelBinding,
  ChannelBindingDoc,
  Firing,
  FiringDoc,
} from './model.js';
import type { ReceptorFiringStore } from './store.js';

type Json = Record<string, unknown>;

const toFiring = (d: FiringDoc): Firing => ({ ...d, trigger: decodeBlob<unknown>(d.trigger, null) });
const toBinding = (d: ChannelBindingDoc): ChannelBinding => ({ ...d, metadata: decodeBlob<Json>(d.metadata, {}) });
const toPlan = (d: ActionPlanDoc): ActionPlan => ({ ...d, input: decodeBlob<unknown>(d.input, null) });

/** Runs a write; false when it breaks a unique key (the record exists already). */
async function unlessDuplicate(insert: () => Promise<unknown>): Promise<boolean> {
  try {
    await insert();
    return true;
  } catch (e) {
    if (isDuplicateKey(e)) return false;
    throw e;
  }
}

/** Firings, channel bindings and action plans: the records receptors leave when they fire (part of the receptor repository). */
export function createFiringOps(db: Db): ReceptorFiringStore {
  const firings = db.collection<FiringDoc>('receptor_firings');
  const bindings = db.collection<ChannelBindingDoc>('receptor_channel_bindings');
  const actionPlans = db.collection<ActionPlanDoc>('action_plans');
  const planSearch = searchReader(actionPlans, toPlan);
  const setFiring = async (filter: Filter<FiringDoc> & { _id: string }, set: Partial<FiringDoc>) => {
    await firings.updateOne(filter, { $set: set });
  };
  return {
    /** Records a firing; false when it is recorded already (the same event, or a retried step). */
    recordFiring: (f: Firing) => unlessDuplicate(() => firings.insertOne({ ...f, trigger: encodeBlob(f.trigger) })),
    findFiring: async (workspaceId: string, id: string): Promise<Firing | null> => {
      const d = await findById(firings, id, { workspaceId });
      return d && toFiring(d);
    },
    markFiringRunning: (workspaceId: string, id: string) =>
      setFiring({ _id: id, workspaceId }, { status: 'running', startedAt: new Date() }),
    /** The firing's outcome. By its id alone when the workspace is not given: the fire workflow's own record, named by its workflow id. */
    finishFiring: (
      id: string,
      status: 'completed' | 'failed' | 'skipped',
      reason: string | null,
      workspaceId?: string,
    ) => setFiring({ _id: id, ...(workspaceId ? { workspaceId } : {}) }, { status, reason, finishedAt: new Date() }),
    /** Recent firings of a receptor (newest first). */
    recentFirings: async (workspaceId: string, receptorId: string, limit: number): Promise<Firing[]> =>
      (await firings.find({ workspaceId, receptorId }).sort({ firedAt: -1 }).limit(limit).toArray()).map(toFiring),

    /** Records a proposed plan; false when it is recorded already (a retried step). */
    proposePlan: (p: ActionPlan) => unlessDuplicate(() => actionPlans.insertOne({ ...p, input: encodeBlob(p.input) })),
    setPlanExecution: async (workspaceId: string, id: string, executionJobId: string): Promise<void> => {
      await actionPlans.updateOne({ _id: id, workspaceId }, { $set: { executionJobId, updatedAt: new Date() } });
    },
    /** Marks a plan executed; the plan as it was, or null when it is not in the workspace. */
    async markPlanExecuted(workspaceId: string, id: string): Promise<ActionPlan | null> {
      const plan = await findById(actionPlans, id, { workspaceId });
      await actionPlans.updateOne({ _id: id, workspaceId }, { $set: { status: 'executed', updatedAt: new Date() } });
      return plan && toPlan(plan);
    },

    /** The search index's reads: action plans by id (any workspace) and a walk of them all. */
    planSearchRows: planSearch.byIds,
    allPlanSearchRows: planSearch.all,

    findBinding: async (workspaceId: string, id: string): Promise<ChannelBinding | null> => {
      const d = await findById(bindings, id, { workspaceId });
      return d && toBinding(d);
    },
    /** The binding of a conversation, whatever its workspace (the webhook ingress: a conversation reaches one receptor). */
    bindingFor: async (channel: string, externalId: string): Promise<ChannelBinding | null> => {
      const d = await bindings.findOne({ channel, externalId });
      return d && toBinding(d);
    },
    pageBindings: async (workspaceId: string, where: BindingListWhere, q: PageQuery): Promise<Page<ChannelBinding>> => {
      const filter: Filter<ChannelBindingDoc> = { workspaceId };
      if (where.receptorId) filter.receptorId = where.receptorId;
      if (where.channel) filter.channel = where.channel;
      if (where.id) filter._id = where.id;
      const p = await page(bindings, filter, { field: 'createdAt', dir: -1 }, q);
      return { ...p, items: p.items.map(toBinding) };
    },
    /** A new binding; false when the conversation is bound already. */
    createBinding: (b: ChannelBinding) =>
      unlessDuplicate(() => bindings.insertOne({ ...b, metadata: encodeBlob(b.metadata, 'metadata') })),
    /** Changes a binding; false when the new conversation is bound already. */
    async updateBinding(workspaceId: string, id: string, set: BindingChange): Promise<boolean> {
      const { metadata, ...rest } = set;
      const stored = { ...rest, ...(metadata !== undefined ? { metadata: encodeBlob(metadata, 'metadata') } : {}) };
      return unlessDuplicate(() => bindings.updateOne({ _id: id, workspaceId }, { $set: stored }));
    },
    removeBinding: async (workspaceId: string, id: string): Promise<void> => {
      await bindings.deleteOne({ _id: id, workspaceId });
    },
  };
}
