import type { Db } from 'mongodb';
import { claim } from '../kernel/store/claims.js';
import { findById, type IndexSpec } from '../kernel/store/client.js';

/** Share-link look and feel (validated by src/shares/schemas.ts). */
interface ShareCustomization {
  title?: string;
  greeting?: string;
  colors?: { primary?: string; background?: string; text?: string };
  logo_url?: string;
}

/**
 * The live share token of a receptor (one per receptor; docs/shares.md). The token
 * itself is never stored: its SHA-256 is, and the id stays the same across rotations, so the
 * link's budget survives a rotation (a rotation is not a way to reset spending).
 */
export interface ShareTokenDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  tokenHash: string;
  prefix: string;
  allowFiles: boolean;
  customization: ShareCustomization;
  expiresAt: Date | null;
  /** Executes the link may start in all; its token limit is a budget (src/usage/budgets.ts, scope share_token). */
  budget: { maxRequests: number | null };
  createdBy: string | null;
  createdAt: Date;
  rotatedAt: Date | null;
  updatedAt: Date;
}

/** A file uploaded through a share link (kept until the knowledge lanes take uploads over). */
export interface ShareUploadDoc {
  _id: string;
  workspaceId: string;
  receptorId: string;
  shareTokenId: string;
  name: string;
  contentType: string;
  size: number;
  data: Buffer;
  createdAt: Date;
}

export const shareIndexes: IndexSpec[] = [
  { collection: 'share_tokens', keys: { receptorId: 1 }, unique: true, name: 'receptor_unique' },
  { collection: 'share_tokens', keys: { tokenHash: 1 }, unique: true, name: 'hash_unique' },
  { collection: 'share_uploads', keys: { workspaceId: 1, receptorId: 1, createdAt: -1 }, name: 'ws_receptor' },
];

export function createShareRepo(db: Db) {
  const tokens = db.collection<ShareTokenDoc>('share_tokens');
  const uploads = db.collection<ShareUploadDoc>('share_uploads');
  return {
    forReceptor: (workspaceId: string, receptorId: string) => tokens.findOne({ workspaceId, receptorId }),
    byHash: (tokenHash: string) => tokens.findOne({ tokenHash }),
    /** Whether the workspace has this share link. */
    exists: async (workspaceId: string, id: string): Promise<boolean> =>
      (await findById(tokens, id, { workspaceId }, { projection: { _id: 1 } })) !== null,
    /** Creates the receptor's link; false when the receptor has one already (its unique index). */
    create: (doc: ShareTokenDoc): Promise<boolean> => claim(tokens, doc),
    update: async (workspaceId: string, id: string, set: Partial<ShareTokenDoc>): Promise<void> => {
      await tokens.updateOne({ _id: id, workspaceId }, { $set: set });
    },
    /** Removes the receptor's link; false when it had none. */
    removeForReceptor: async (workspaceId: string, receptorId: string): Promise<boolean> =>
      (await tokens.deleteOne({ workspaceId, receptorId })).deletedCount === 1,
    addUpload: async (doc: ShareUploadDoc): Promise<void> => {
      await uploads.insertOne(doc);
    },
    /** The files of these ids uploaded through the receptor's link. */
    /** Files uploaded through this share link (another link's, even of the same receptor, are not its). */
    uploadsOf: (workspaceId: string, shareTokenId: string, ids: string[]): Promise<ShareUploadDoc[]> =>
      uploads.find({ _id: { $in: ids }, shareTokenId, workspaceId }).toArray(),
  };
}
export type ShareRepo = ReturnType<typeof createShareRepo>;
