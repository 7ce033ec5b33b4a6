import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { isDuplicateKey } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';

import type { ApiKeyDoc, BrainDoc, WorkspaceDoc } from './model.js';
import type { WorkspaceStore } from './store.js';

export const workspaceIndexes: IndexSpec[] = [
  { collection: 'workspaces', keys: { slug: 1 }, unique: true, name: 'slug_unique' },
  { collection: 'brains', keys: { workspaceId: 1, _id: 1 }, name: 'ws_id' },
  { collection: 'api_keys', keys: { hash: 1 }, unique: true, name: 'hash_unique' },
  // GET /v1/api-keys pages by (createdAt, _id): the workspace's live keys, or those one user created (src/kernel/store/paging.ts).
  ...pageIndexes('api_keys', ['workspaceId', 'revokedAt'], ['createdAt']),
  ...pageIndexes('api_keys', ['workspaceId', 'revokedAt', 'createdBy'], ['createdAt']),
];

/** The workspace store on MongoDB (and FerretDB): workspaces, brains and API keys (the tenancy root; not itself workspace-scoped). */
export function createWorkspaceRepo(db: Db): WorkspaceStore {
  const workspaces = db.collection<WorkspaceDoc>('workspaces');
  const brains = db.collection<BrainDoc>('brains');
  const apiKeys = db.collection<ApiKeyDoc>('api_keys');
  return {
    findWorkspace: (idOrSlug: string) => workspaces.findOne({ $or: [{ _id: idOrSlug }, { slug: idOrSlug }] }),
    /**
     * Idempotent: creates the workspace only if its id is new. Slugs are unique: when the wanted
     * slug is taken, `<slug>-<first 8 of id>` and then the id itself are used, so bootstrap and
     * JWT-provisioned workspaces never collide (an admin can rename it later).
     */
    /** The workspace, created when missing; `mayCreate` (asked only then) refuses one that must not come back. */
    async ensureWorkspace(
      id: string,
      slug: string,
      name: string,
      mayCreate?: () => Promise<boolean>,
    ): Promise<WorkspaceDoc | null> {
      const existing = await workspaces.findOne({ _id: id });
      if (existing) return existing;
      if (mayCreate && !(await mayCreate())) return null;
      for (const candidate of [slug, `${slug}-${id.slice(0, 8)}`, id]) {
        const now = new Date();
        try {
          await workspaces.insertOne({ _id: id, slug: candidate, name, createdAt: now, updatedAt: now });
          return (await workspaces.findOne({ _id: id }))!;
        } catch (e) {
          if (!isDuplicateKey(e)) throw e;
          const raced = await workspaces.findOne({ _id: id });
          if (raced) return raced;
        }
      }
      throw new Error(`no free slug for workspace ${id}`);
    },
    async ensureBrain(workspaceId: string, id: string, name: string): Promise<BrainDoc> {
      const now = new Date();
      await brains.updateOne(
        { _id: id },
        { $setOnInsert: { workspaceId, name, createdAt: now, updatedAt: now } },
        { upsert: true },
      );
      return (await brains.findOne({ _id: id }))!;
    },
    findBrain: (workspaceId: string, id: string) => findById(brains, id, { workspaceId }),
    /** A brain by id whatever its workspace (bootstrap checks that a configured brain is the workspace's). */
    brainById: (id: string) => brains.findOne({ _id: id }),
    /** The workspace's brains, oldest first (at most `limit`). */
    brainsOf: (workspaceId: string, limit?: number) =>
      brains
        .find({ workspaceId })
        .sort({ createdAt: 1 })
        .limit(limit ?? 0)
        .toArray(),
    /** Every workspace's id (the usage reconciler's round). */
    workspaceIds: async (): Promise<string[]> =>
      (await workspaces.find({}, { projection: { _id: 1 } }).toArray()).map((w) => w._id),
    /** Whether another workspace than `exceptId` has this slug. */
    slugTaken: async (slug: string, exceptId: string): Promise<boolean> =>
      (await workspaces.findOne({ slug, _id: { $ne: exceptId } })) !== null,
    /** Changes the workspace's slug or name; the workspace after it (null: none of that id). */
    async updateWorkspace(id: string, set: Partial<Pick<WorkspaceDoc, 'slug' | 'name' | 'updatedAt'>>) {
      await workspaces.updateOne({ _id: id }, { $set: set });
      return workspaces.findOne({ _id: id });
    },
    /** The live API key of this hash (authentication). */
    liveKeyByHash: (hash: string) => apiKeys.findOne({ hash, revokedAt: null }),
    /** The API key of this hash, live or revoked, whatever its workspace (bootstrap). */
    keyByHash: (hash: string) => apiKeys.findOne({ hash }),
    /** One live API key of the workspace. */
    findLiveKey: (workspaceId: string, id: string) => findById(apiKeys, id, { workspaceId, revokedAt: null }),
    /** Records when a key was last used (a coarse signal). */
    touchKey: async (id: string, at: Date): Promise<void> => {
      await apiKeys.updateOne({ _id: id }, { $set: { lastUsedAt: at } });
    },
    insertKey: async (doc: ApiKeyDoc): Promise<void> => {
      await apiKeys.insertOne(doc);
    },
    /** A page of the workspace's live keys, newest first (`createdBy`: only that user's). */
    pageKeys: (workspaceId: string, f: { createdBy?: string }, q: PageQuery): Promise<Page<ApiKeyDoc>> =>
      page(apiKeys, { workspaceId, revokedAt: null, ...f }, { field: 'createdAt', dir: -1 }, q),
    revokeKey: async (workspaceId: string, id: string): Promise<void> => {
      await apiKeys.updateOne({ _id: id, workspaceId }, { $set: { revokedAt: new Date() } });
    },
    /** Sets (null: clears) a live key's own request limit; the key after it, null when the workspace has no such live key. */
    async setKeyRateLimit(workspaceId: string, id: string, limit: ApiKeyDoc['rateLimit']) {
      const res = await apiKeys.updateOne({ _id: id, workspaceId, revokedAt: null }, { $set: { rateLimit: limit } });
      if (res.matchedCount === 0) return null;
      return findById(apiKeys, id, { workspaceId });
    },
    /** Creates the key of this hash unless it exists (bootstrap; idempotent). */
    ensureKey: async (hash: string, doc: Omit<ApiKeyDoc, 'hash'>): Promise<void> => {
      await apiKeys.updateOne({ hash }, { $setOnInsert: doc }, { upsert: true });
    },
  };
}
