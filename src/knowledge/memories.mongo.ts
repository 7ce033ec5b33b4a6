import type { Db, Filter } from 'mongodb';
import { findById } from '../kernel/store/client.js';
import type {
  ChunkedKind,
  KnowledgeSort,
  Memory,
  MemoryDoc,
  MemoryScope,
  Recollection,
  RecollectionDoc,
  RecollectionMember,
} from './model.js';
import { encodeSet, fromMemory, heldUpdate, knowledgeCollections, toMemory } from './rows.mongo.js';
import { page, type PageQuery } from '../kernel/store/paging.js';
import type { MemoryStore, RecollectionStore } from './store.js';

/** Memories (docs/knowledge.md, "Memories and recollections"). */
export function createMemoryOps(db: Db): MemoryStore {
  const c = knowledgeCollections(db);
  const update = heldUpdate(c.holds);
  const inBrain = (workspaceId: string, brainId: string | undefined, ids: string[]): Filter<MemoryDoc> => ({
    workspaceId,
    _id: { $in: ids },
    ...(brainId ? { brainId } : {}),
  });
  return {
    get: async (workspaceId: string, id: string): Promise<Memory | null> => {
      const m = await findById(c.memories, id, { workspaceId });
      return m && toMemory(m);
    },
    insert: async (m: Memory): Promise<void> => {
      await c.memories.insertOne(fromMemory(m));
    },
    page: async (workspaceId: string, s: MemoryScope, sort: KnowledgeSort, q: PageQuery) => {
      const filter: Filter<MemoryDoc> = { workspaceId };
      if (s.brainId) filter.brainId = s.brainId;
      if (s.sourceType) filter.sourceType = s.sourceType;
      if (s.ownerType) filter.ownerType = s.ownerType;
      if (s.ownerId) filter.ownerId = s.ownerId;
      const p = await page(c.memories, filter, sort, q);
      return { ...p, items: p.items.map(toMemory) };
    },
    /** Those of `ids` that are memories of the workspace (and of the brain, when given). */
    findMany: async (workspaceId: string, ids: string[], brainId?: string): Promise<Memory[]> =>
      (await c.memories.find(inBrain(workspaceId, brainId, ids)).toArray()).map(toMemory),
    /** Memories of the workspace (and brain) by name, at most `limit` (the broad resource tree). */
    byName: async (workspaceId: string, brainId: string | undefined, limit: number) =>
      (
        await c.memories
          .find({ workspaceId, ...(brainId ? { brainId } : {}) })
          .sort({ name: 1 })
          .limit(limit)
          .toArray()
      ).map(toMemory),
    /** Head fields (name, description, title source…) under the row's hold; `onlyWhile` must still hold. */
    setHead: (
      workspaceId: string,
      id: string,
      set: Partial<Memory>,
      onlyWhile: Partial<Pick<Memory, 'titleSource'>> = {},
    ) => update(c.memories, { _id: id, workspaceId, ...onlyWhile }, encodeSet(set)),
    /** Removes a memory; true when this call removed it. Its chunks and memberships go with `removeRelated`. */
    remove: async (workspaceId: string, id: string): Promise<boolean> =>
      (await c.memories.deleteOne({ _id: id, workspaceId })).deletedCount > 0,
    removeRelated: async (workspaceId: string, id: string): Promise<void> => {
      await Promise.all([
        c.chunks.deleteMany({ resourceId: id, workspaceId }),
        c.members.deleteMany({ resourceId: id, workspaceId }),
      ]);
    },
    /** Those of `ids` that are memories of the brain. */
    idsIn: async (workspaceId: string, brainId: string, ids: string[]) =>
      (await c.memories.find(inBrain(workspaceId, brainId, ids), { projection: { _id: 1 } }).toArray()).map(
        (m) => m._id,
      ),
    countIn: (workspaceId: string, brainId: string, ids: string[]) =>
      c.memories.countDocuments(inBrain(workspaceId, brainId, ids)),
  };
}

/** Recollections and their members: named groupings of a brain's resources. */
export function createRecollectionOps(db: Db): RecollectionStore {
  const c = knowledgeCollections(db);
  return {
    get: (workspaceId: string, id: string): Promise<Recollection | null> =>
      findById(c.recollections, id, { workspaceId }),
    insert: async (r: Recollection): Promise<void> => {
      await c.recollections.insertOne(r);
    },
    page: (workspaceId: string, brainId: string | undefined, q: PageQuery) =>
      page(c.recollections, { workspaceId, ...(brainId ? { brainId } : {}) }, { field: 'createdAt', dir: -1 }, q),
    update: async (workspaceId: string, id: string, set: Partial<RecollectionDoc>): Promise<void> => {
      await c.recollections.updateOne({ _id: id, workspaceId }, { $set: set });
    },
    /** Removes a recollection and its memberships. */
    remove: async (workspaceId: string, id: string): Promise<void> => {
      await c.recollections.deleteOne({ _id: id, workspaceId });
      await c.members.deleteMany({ recollectionId: id, workspaceId });
    },
    /** The members, oldest first (at most 1,000). */
    members: (workspaceId: string, id: string): Promise<RecollectionMember[]> =>
      c.members.find({ recollectionId: id, workspaceId }).sort({ addedAt: 1 }).limit(1000).toArray(),
    /** The ids of all members. */
    memberIds: async (workspaceId: string, id: string): Promise<string[]> =>
      (await c.members.find({ recollectionId: id, workspaceId }, { projection: { resourceId: 1 } }).toArray()).map(
        (m) => m.resourceId,
      ),
    /** Adds members (idempotent: `_id` `<recollection>:<resource>`, an existing membership is kept as it was). */
    async addMembers(workspaceId: string, id: string, kinds: Map<string, ChunkedKind>, addedAt: Date): Promise<void> {
      if (!kinds.size) return;
      await c.members.bulkWrite(
        [...kinds].map(([resourceId, resourceKind]) => ({
          updateOne: {
            filter: { _id: `${id}:${resourceId}`, workspaceId },
            upsert: true,
            update: {
              $setOnInsert: {
                _id: `${id}:${resourceId}`,
                workspaceId,
                recollectionId: id,
                resourceKind,
                resourceId,
                addedAt,
              },
            },
          },
        })),
        { ordered: false },
      );
    },
    async removeMembers(workspaceId: string, id: string, resourceIds: string[]): Promise<void> {
      if (!resourceIds.length) return;
      await c.members.deleteMany({ recollectionId: id, workspaceId, resourceId: { $in: resourceIds } });
    },
  };
}
