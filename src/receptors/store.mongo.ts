import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import { createFiringOps } from './firings.mongo.js';
import { searchReader } from '../kernel/store/rows.js';
import type {
  ChannelBindingDoc,
  Receptor,
  ReceptorChange,
  ReceptorDoc,
  ReceptorListWhere,
  ReceptorTargetKind,
} from './model.js';
import type { ReceptorStore } from './store.js';

type Json = Record<string, unknown>;

const toReceptor = (d: ReceptorDoc): Receptor => ({
  ...d,
  config: decodeBlob<Json>(d.config, {}),
  sourceConfig: decodeBlob<Json>(d.sourceConfig, {}),
});
/** The stored form of a change: blob fields encoded. */
function encodeChange(set: ReceptorChange): Partial<ReceptorDoc> {
  const { config, sourceConfig, ...rest } = set;
  return {
    ...rest,
    ...(config !== undefined ? { config: encodeBlob(config) } : {}),
    ...(sourceConfig !== undefined ? { sourceConfig: encodeBlob(sourceConfig) } : {}),
  };
}

export const receptorIndexes: IndexSpec[] = [
  { collection: 'receptors', keys: { workspaceId: 1, slug: 1 }, unique: true, name: 'ws_slug_unique' },
  {
    collection: 'receptors',
    keys: { workspaceId: 1, 'executableTarget.kind': 1, 'executableTarget.id': 1 },
    name: 'ws_target',
  },
  { collection: 'receptors', keys: { workspaceId: 1, brainId: 1, createdAt: -1 }, name: 'ws_brain_created' },
  // GET /v1/receptors pages by (sort field, _id); brain visibility and the target filter are checked on the workspace's rows read in that order.
  ...pageIndexes('receptors', ['workspaceId'], ['createdAt', 'updatedAt', 'slug']),
  { collection: 'receptors', keys: { workspaceId: 1, stimulusKeys: 1 }, name: 'ws_stimulus' },
  { collection: 'receptors', keys: { activation: 1 }, name: 'activation' },
  { collection: 'receptor_firings', keys: { workspaceId: 1, receptorId: 1, firedAt: -1 }, name: 'ws_receptor_fired' },
  {
    collection: 'receptor_channel_bindings',
    keys: { channel: 1, externalId: 1 },
    unique: true,
    name: 'channel_external_unique',
  },
  { collection: 'receptor_channel_bindings', keys: { workspaceId: 1, receptorId: 1 }, name: 'ws_receptor' },
  // GET /v1/receptor-channel-bindings pages by (createdAt, _id) (src/kernel/store/paging.ts).
  ...pageIndexes('receptor_channel_bindings', ['workspaceId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'receptorId'], ['createdAt']),
  ...pageIndexes('receptor_channel_bindings', ['workspaceId', 'channel'], ['createdAt']),
  { collection: 'action_plans', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

/**
 * Receptor storage: receptors, their firings, channel bindings and action plans. Every query
 * filters by workspace, except the schedule reconciler's scan, the webhook ingress's lookup of a
 * conversation (unique on the platform) and the fire workflow's own record (keyed by its workflow id).
 */
export function createReceptorRepo(db: Db): ReceptorStore {
  const receptors = db.collection<ReceptorDoc>('receptors');
  const bindings = db.collection<ChannelBindingDoc>('receptor_channel_bindings');
  const search = searchReader(receptors, toReceptor);
  const one = async (filter: Filter<ReceptorDoc>) => {
    const d = await receptors.findOne(filter);
    return d && toReceptor(d);
  };
  const many = async (filter: Filter<ReceptorDoc>) => (await receptors.find(filter).toArray()).map(toReceptor);
  const targetOf = (workspaceId: string, kind: ReceptorTargetKind, id: string): Filter<ReceptorDoc> => ({
    workspaceId,
    'executableTarget.kind': kind,
    'executableTarget.id': id,
  });
  return {
    findById: async (workspaceId: string, id: string) => {
      const d = await findById(receptors, id, { workspaceId });
      return d && toReceptor(d);
    },
    /** Whether the receptor exists in the workspace. */
    exists: async (workspaceId: string, id: string) =>
      (await findById(receptors, id, { workspaceId }, { projection: { _id: 1 } })) !== null,
    findBySlug: (workspaceId: string, slug: string) => one({ workspaceId, slug }),
    /** The receptor a target owns (subscriptions to it left out), or null. */
    ownReceptorOf: (workspaceId: string, kind: ReceptorTargetKind, id: string) =>
      one({ ...targetOf(workspaceId, kind, id), origin: { $ne: 'subscription' } }),
    /** Every receptor that dispatches this target (its own and subscriptions to it). */
    allForTarget: (workspaceId: string, kind: ReceptorTargetKind, id: string) => many(targetOf(workspaceId, kind, id)),
    /** Slugs and target kinds by id (usage reports). */
    labelsOf: async (workspaceId: string, ids: string[]): Promise<Map<string, { slug: string; kind: string }>> =>
      new Map(
        ids.length === 0
          ? []
          : (await receptors.find({ workspaceId, _id: { $in: ids } }).toArray()).map((r) => [
              r._id,
              { slug: r.slug, kind: r.executableTarget?.kind ?? 'receptor' },
            ]),
      ),
    page: async (
      workspaceId: string,
      where: ReceptorListWhere,
      sort: PageSort,
      q: PageQuery,
    ): Promise<Page<Receptor>> => {
      const filter: Filter<ReceptorDoc> = { workspaceId };
      if (where.brainId) filter.$or = [{ brainId: where.brainId }, { scope: { $in: ['workspace', 'core'] } }];
      if (where.targetKind) filter['executableTarget.kind'] = where.targetKind;
      if (where.ids) filter._id = { $in: where.ids };
      const p = await page(receptors, filter, sort, q);
      return { ...p, items: p.items.map(toReceptor) };
    },
    /** A new receptor; false when its slug is taken in the workspace. */
    async create(r: Receptor): Promise<boolean> {
      try {
        await receptors.insertOne({ ...r, config: encodeBlob(r.config), sourceConfig: encodeBlob(r.sourceConfig) });
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    async update(workspaceId: string, id: string, set: ReceptorChange): Promise<void> {
      await receptors.updateOne({ _id: id, workspaceId }, { $set: encodeChange(set) });
    },
    /** Removes a receptor and its channel bindings. */
    async remove(workspaceId: string, id: string): Promise<void> {
      await receptors.deleteOne({ _id: id, workspaceId });
      await bindings.deleteMany({ workspaceId, receptorId: id });
    },
    /** The stimulus receptors of a workspace that subscribe to any of these patterns (event activation). */
    subscribers: (workspaceId: string, patterns: string[]) =>
      many({ workspaceId, activation: 'event', stimulusKeys: { $in: patterns }, activeChannels: 'stimulus' }),
    /** Every receptor with a schedule, across workspaces (the start-up reconciler). */
    scheduled: () => many({ activation: 'schedule' }),
    /** The search index's reads: receptors by id (any workspace) and a walk of them all. */
    searchRows: search.byIds,
    allSearchRows: search.all,
    ...createFiringOps(db),
  };
}
