import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { escapeRegex, findById } from '../kernel/store/client.js';
import { searchReader } from '../kernel/store/rows.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import type { NeuronReflexDoc, Reflex, ReflexChange, ReflexDoc, ReflexListWhere } from './model.js';
import type { ReflexStore } from './store.js';

const toReflex = (d: ReflexDoc): Reflex => ({ ...d, metadata: decodeBlob<Record<string, unknown>>(d.metadata, {}) });

export const reflexIndexes: IndexSpec[] = [
  // GET /v1/reflexes pages by (sort field, _id), with or without ?type; visibility and search are checked on the rows read in that order.
  ...pageIndexes('reflexes', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('reflexes', ['workspaceId', 'type'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'neuron_reflexes', keys: { neuronId: 1, reflexId: 1 }, unique: true, name: 'neuron_reflex_unique' },
  { collection: 'neuron_reflexes', keys: { workspaceId: 1, reflexId: 1 }, name: 'ws_reflex' },
];

/** Reflexes and neuron–reflex links; every query filters by workspace. */
export function createReflexRepo(db: Db): ReflexStore {
  const reflexes = db.collection<ReflexDoc>('reflexes');
  const links = db.collection<NeuronReflexDoc>('neuron_reflexes');
  const search = searchReader(reflexes, toReflex);
  return {
    findById: async (workspaceId: string, id: string) => {
      const d = await findById(reflexes, id, { workspaceId });
      return d && toReflex(d);
    },
    /** Reflexes of these ids (any order; missing ones left out). */
    findMany: async (workspaceId: string, ids: string[]): Promise<Reflex[]> =>
      ids.length === 0
        ? []
        : (await reflexes.find({ workspaceId, _id: { $in: [...new Set(ids)] } }).toArray()).map(toReflex),
    /** Up to `limit` reflexes of the workspace, in store order. */
    someOfWorkspace: async (workspaceId: string, limit: number): Promise<Reflex[]> =>
      (await reflexes.find({ workspaceId }).limit(limit).toArray()).map(toReflex),
    page: async (workspaceId: string, where: ReflexListWhere, sort: PageSort, q: PageQuery): Promise<Page<Reflex>> => {
      const and: Filter<ReflexDoc>[] = [];
      if (where.brainId) and.push({ $or: [{ brainId: where.brainId }, { scope: { $in: ['workspace', 'core'] } }] });
      if (where.search) {
        const rx = { $regex: escapeRegex(where.search), $options: 'i' };
        and.push({ $or: [{ name: rx }, { description: rx }] });
      }
      const filter: Filter<ReflexDoc> = {
        workspaceId,
        ...(where.type ? { type: where.type } : {}),
        ...(and.length ? { $and: and } : {}),
      };
      const p = await page(reflexes, filter, sort, q);
      return { ...p, items: p.items.map(toReflex) };
    },
    create: async (r: Reflex): Promise<void> => {
      await reflexes.insertOne({ ...r, metadata: encodeBlob(r.metadata, 'metadata') });
    },
    /** The reflex after the change, or null when it is not in the workspace. */
    update: async (workspaceId: string, id: string, set: ReflexChange): Promise<Reflex | null> => {
      const { metadata, ...rest } = set;
      const d = await reflexes.findOneAndUpdate(
        { _id: id, workspaceId },
        { $set: { ...rest, ...(metadata !== undefined ? { metadata: encodeBlob(metadata, 'metadata') } : {}) } },
        { returnDocument: 'after' },
      );
      return d && toReflex(d);
    },
    /** Removes the reflex: its links first, the reflex last (a retry finishes the job). */
    remove: async (workspaceId: string, id: string): Promise<void> => {
      await links.deleteMany({ workspaceId, reflexId: id });
      await reflexes.deleteOne({ _id: id, workspaceId });
    },
    /** The search index's reads: reflexes by id (any workspace) and a walk of them all. */
    searchRows: search.byIds,
    allSearchRows: search.all,
    linksOfNeuron: (workspaceId: string, neuronId: string) =>
      links.find({ workspaceId, neuronId }).sort({ createdAt: 1, _id: 1 }).toArray(),
    /** Records an assignment; false when the reflex is assigned to the neuron already. */
    link: async (l: NeuronReflexDoc): Promise<boolean> => {
      try {
        await links.insertOne(l);
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    /** Drops one assignment; false when there was none. */
    unlink: async (workspaceId: string, neuronId: string, reflexId: string): Promise<boolean> =>
      (await links.deleteOne({ _id: `${neuronId}:${reflexId}`, workspaceId })).deletedCount === 1,
    /** Drops every link of a neuron (the neuron is being removed). */
    unlinkNeuron: async (workspaceId: string, neuronId: string): Promise<void> => {
      await links.deleteMany({ workspaceId, neuronId });
    },
    /** Drops every link of a reflex (the reflex is being removed). */
    unlinkReflex: async (workspaceId: string, reflexId: string): Promise<void> => {
      await links.deleteMany({ workspaceId, reflexId });
    },
  };
}
