import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { ApiKeyDoc, BrainDoc, WorkspaceDoc } from './model.js';

export type { PageQuery } from '../kernel/store/paging.js';

/**
 * What the platform's services (authentication, bootstrap, workspace and key administration) ask of
 * the store of workspaces, brains and API keys, in domain terms (workspaces.mongo.ts is the MongoDB
 * and FerretDB adapter). The tenancy root: not itself workspace-scoped.
 */
export interface WorkspaceStore {
  /** The workspace of this id or slug, or null. */
  findWorkspace(idOrSlug: string): Promise<WorkspaceDoc | null>;
  /**
   * The workspace, created when missing; `mayCreate` (asked only then) refuses one that must not
   * come back (null). Idempotent: creates the workspace only if its id is new. Slugs are unique:
   * when the wanted slug is taken, `<slug>-<first 8 of id>` and then the id itself are used.
   */
  ensureWorkspace(
    id: string,
    slug: string,
    name: string,
    mayCreate?: () => Promise<boolean>,
  ): Promise<WorkspaceDoc | null>;
  /** The brain of this id, created in the workspace when missing (idempotent). */
  ensureBrain(workspaceId: string, id: string, name: string): Promise<BrainDoc>;
  /** The workspace's brain of this id, or null. */
  findBrain(workspaceId: string, id: string): Promise<BrainDoc | null>;
  /** A brain by id whatever its workspace (bootstrap checks that a configured brain is the workspace's). */
  brainById(id: string): Promise<BrainDoc | null>;
  /** The workspace's brains, oldest first (at most `limit`). */
  brainsOf(workspaceId: string, limit?: number): Promise<BrainDoc[]>;
  /** Every workspace's id (the usage reconciler's round). */
  workspaceIds(): Promise<string[]>;
  /** Whether another workspace than `exceptId` has this slug. */
  slugTaken(slug: string, exceptId: string): Promise<boolean>;
  /** Changes the workspace's slug or name; the workspace after it (null: none of that id). */
  updateWorkspace(
    id: string,
    set: Partial<Pick<WorkspaceDoc, 'slug' | 'name' | 'updatedAt'>>,
  ): Promise<WorkspaceDoc | null>;
  /** The live API key of this hash (authentication). */
  liveKeyByHash(hash: string): Promise<ApiKeyDoc | null>;
  /** The API key of this hash, live or revoked, whatever its workspace (bootstrap). */
  keyByHash(hash: string): Promise<ApiKeyDoc | null>;
  /** One live API key of the workspace. */
  findLiveKey(workspaceId: string, id: string): Promise<ApiKeyDoc | null>;
  /** Records when a key was last used (a coarse signal). */
  touchKey(id: string, at: Date): Promise<void>;
  /** Stores a new API key. */
  insertKey(doc: ApiKeyDoc): Promise<void>;
  /** A page of the workspace's live keys, newest first (`createdBy`: only that user's). */
  pageKeys(workspaceId: string, f: { createdBy?: string }, q: PageQuery): Promise<Page<ApiKeyDoc>>;
  /** Revokes the workspace's key of this id. */
  revokeKey(workspaceId: string, id: string): Promise<void>;
  /** Sets (null: clears) a live key's own request limit; the key after it, null when the workspace has no such live key. */
  setKeyRateLimit(workspaceId: string, id: string, limit: ApiKeyDoc['rateLimit']): Promise<ApiKeyDoc | null>;
  /** Creates the key of this hash unless it exists (bootstrap; idempotent). */
  ensureKey(hash: string, doc: Omit<ApiKeyDoc, 'hash'>): Promise<void>;
}
