import type { DeletionDoc, RetentionKind, RetentionSettingsDoc } from './model.js';

/** What one bounded deletion removed: rows by collection, and the blob keys and ids they named. */
export interface Removed {
  rows: Record<string, number>;
  blobKeys: string[];
  /** Ids whose Redis keys go too: ended jobs (their streams), traces (`traceId`), transcription sessions. */
  jobIds: string[];
  traceIds: string[];
  sessionIds: string[];
}

/** The tenancy area's store contract (src/tenancy/store.mongo.ts is its adapter). */
export interface TenancyStore {
  settings(workspaceId: string): Promise<RetentionSettingsDoc | null>;
  saveSettings(workspaceId: string, windows: RetentionSettingsDoc['windows']): Promise<RetentionSettingsDoc>;
  /** Deletes at most `limit` expired rows of one kind (with their children), older than `before`. */
  expire(workspaceId: string, kind: RetentionKind, before: Date, limit: number): Promise<Removed>;
  /** Every collection of the store that may hold a workspace's rows. */
  collections(): Promise<string[]>;
  /** Rows and bytes (BSON) a workspace holds per collection, and the bytes of its blobs. */
  usage(
    workspaceId: string,
  ): Promise<{ collections: Record<string, { rows: number; bytes: number }>; blobBytes: number }>;
  /** The ids of a batch of a workspace's rows in one collection (after `after`, in `_id` order). */
  ownedIds(collection: string, workspaceId: string, after: string | null, limit: number): Promise<string[]>;
  /** Deletes at most `limit` of a workspace's rows in every collection (children first); nothing left: rows is empty. */
  eraseBatch(workspaceId: string, limit: number): Promise<Removed>;
  /** Every row of a workspace, collection by collection (children included), for the archive. */
  rowsOf(workspaceId: string): AsyncGenerator<{ collection: string; doc: Record<string, unknown> }>;
  insertRows(collection: string, docs: Record<string, unknown>[]): Promise<void>;
  /** The workspace's API keys: id and digest (their Redis keys: rate limits, recently-valid marks). */
  apiKeys(workspaceId: string): Promise<{ id: string; hash: string }[]>;
  /** The workspace's share-link tokens: id and digest (their Redis keys, as for API keys). */
  shareTokens(workspaceId: string): Promise<{ id: string; hash: string }[]>;
  deleteIds(collection: string, ids: string[]): Promise<void>;
  workspaceExists(workspaceId: string): Promise<boolean>;
  /** Whether an operator deleted (or is deleting) the workspace: a JWT for it provisions nothing. */
  isDeleted(workspaceId: string): Promise<boolean>;
  /** An import brought the workspace back: its deletions no longer name it. */
  forgetDeleted(workspaceId: string): Promise<void>;
  deletions: {
    create(doc: DeletionDoc): Promise<void>;
    get(id: string): Promise<DeletionDoc | null>;
    update(id: string, set: Partial<DeletionDoc>, add?: Record<string, number>): Promise<void>;
  };
}
