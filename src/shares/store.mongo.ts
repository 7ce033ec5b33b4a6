import type { Db } from 'mongodb';
import { claim } from '../kernel/store/claims.js';
import { findById, type IndexSpec } from '../kernel/store/client.js';
import type { ShareTokenDoc, ShareUploadDoc } from './model.js';
import type { ShareStore } from './store.js';

export const shareIndexes: IndexSpec[] = [
  { collection: 'share_tokens', keys: { receptorId: 1 }, unique: true, name: 'receptor_unique' },
  { collection: 'share_tokens', keys: { tokenHash: 1 }, unique: true, name: 'hash_unique' },
  { collection: 'share_uploads', keys: { workspaceId: 1, receptorId: 1, createdAt: -1 }, name: 'ws_receptor' },
];

/** The share links' store on MongoDB (and FerretDB): one link per receptor and per token hash (unique indexes). */
export function createShareRepo(db: Db): ShareStore {
  const tokens = db.collection<ShareTokenDoc>('share_tokens');
  const uploads = db.collection<ShareUploadDoc>('share_uploads');
  return {
    forReceptor: (workspaceId: string, receptorId: string): Promise<ShareTokenDoc | null> =>
      tokens.findOne({ workspaceId, receptorId }),
    byHash: (tokenHash: string): Promise<ShareTokenDoc | null> => tokens.findOne({ tokenHash }),
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
    /** Files uploaded through this share link (another link's, even of the same receptor, are not its). */
    uploadsOf: (workspaceId: string, shareTokenId: string, ids: string[]): Promise<ShareUploadDoc[]> =>
      uploads.find({ _id: { $in: ids }, shareTokenId, workspaceId }).toArray(),
  };
}
