import type { Db } from 'mongodb';
import type { IndexSpec } from './client.js';

export interface WorkspaceDoc { _id: string; slug: string; name: string; createdAt: Date; updatedAt: Date }
export interface BrainDoc { _id: string; workspaceId: string; name: string; createdAt: Date; updatedAt: Date }
export interface ApiKeyDoc {
  _id: string; workspaceId: string; name: string; hash: string; prefix: string;
  roles: string[]; createdBy: string | null; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null;
}

export const workspaceIndexes: IndexSpec[] = [
  { collection: 'workspaces', keys: { slug: 1 }, unique: true, name: 'slug_unique' },
  { collection: 'brains', keys: { workspaceId: 1, _id: 1 }, name: 'ws_id' },
  { collection: 'api_keys', keys: { hash: 1 }, unique: true, name: 'hash_unique' },
  { collection: 'api_keys', keys: { workspaceId: 1, createdAt: -1 }, name: 'ws_created' },
];

/** Workspace, brain and API-key storage (the tenancy root; not itself workspace-scoped). */
export function createWorkspaceRepo(db: Db) {
  const workspaces = db.collection<WorkspaceDoc>('workspaces');
  const brains = db.collection<BrainDoc>('brains');
  const apiKeys = db.collection<ApiKeyDoc>('api_keys');
  return {
    workspaces, brains, apiKeys,
    findWorkspace: (idOrSlug: string) => workspaces.findOne({ $or: [{ _id: idOrSlug }, { slug: idOrSlug }] }),
    /** Idempotent: creates the workspace only if its id is new. */
    async ensureWorkspace(id: string, slug: string, name: string): Promise<WorkspaceDoc> {
      const now = new Date();
      await workspaces.updateOne({ _id: id }, { $setOnInsert: { slug, name, createdAt: now, updatedAt: now } }, { upsert: true });
      return (await workspaces.findOne({ _id: id }))!;
    },
    async ensureBrain(workspaceId: string, id: string, name: string): Promise<BrainDoc> {
      const now = new Date();
      await brains.updateOne({ _id: id }, { $setOnInsert: { workspaceId, name, createdAt: now, updatedAt: now } }, { upsert: true });
      return (await brains.findOne({ _id: id }))!;
    },
    findBrain: (workspaceId: string, id: string) => brains.findOne({ _id: id, workspaceId }),
  };
}
export type WorkspaceRepo = ReturnType<typeof createWorkspaceRepo>;
