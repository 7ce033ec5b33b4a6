import type { ShareTokenDoc, ShareUploadDoc } from './model.js';

/**
 * What the share service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): a receptor's one live link, found by its token's hash, and the files uploaded
 * through it.
 */
export interface ShareStore {
  /** The receptor's link, or null. */
  forReceptor(workspaceId: string, receptorId: string): Promise<ShareTokenDoc | null>;
  /** The link whose token has this SHA-256, any workspace (a visitor presents only the token), or null. */
  byHash(tokenHash: string): Promise<ShareTokenDoc | null>;
  /** Whether the workspace has this share link. */
  exists(workspaceId: string, id: string): Promise<boolean>;
  /** Creates the receptor's link; false when the receptor has one already (its unique index). */
  create(doc: ShareTokenDoc): Promise<boolean>;
  /** Changes the given fields of one link of the workspace (none when it has none of that id). */
  update(workspaceId: string, id: string, set: Partial<ShareTokenDoc>): Promise<void>;
  /** Removes the receptor's link; false when it had none. */
  removeForReceptor(workspaceId: string, receptorId: string): Promise<boolean>;
  /** Stores a file uploaded through a link. */
  addUpload(doc: ShareUploadDoc): Promise<void>;
  /** Files of these ids uploaded through this share link (another link's, even of the same receptor, are not its). */
  uploadsOf(workspaceId: string, shareTokenId: string, ids: string[]): Promise<ShareUploadDoc[]>;
}
