import type { Db, Filter } from 'mongodb';
import { claimNext } from '../kernel/store/claims.js';
import { findById } from '../kernel/store/client.js';
import type { DocumentDoc, DocumentScope, DocumentVersion, KnowledgeDocument, KnowledgeSort } from './model.js';
import type { DocumentStore } from './store.js';
import {
  encodeSet,
  fromDocument,
  fromVersion,
  heldUpdate,
  knowledgeCollections,
  toDocument,
  toVersion,
  underPrefix,
} from './rows.mongo.js';
import { page, type PageQuery } from '../kernel/store/paging.js';

function scoped(workspaceId: string, s: DocumentScope): Filter<DocumentDoc> {
  const filter: Filter<DocumentDoc> = { workspaceId };
  if (s.lane) filter.lane = s.lane;
  if (s.brainId) filter.brainId = s.brainId;
  if (s.path !== undefined) filter.path = s.path;
  else if (s.pathPrefix) filter.path = underPrefix(s.pathPrefix);
  return filter;
}

/** Assets and artifacts: the document table's rows and their versions (docs/knowledge.md). */
export function createDocumentOps(db: Db): DocumentStore {
  const c = knowledgeCollections(db);
  const update = heldUpdate(c.holds);
  return {
    get: async (workspaceId: string, id: string): Promise<KnowledgeDocument | null> => {
      const r = await findById(c.documents, id, { workspaceId });
      return r && toDocument(r);
    },
    insert: async (doc: KnowledgeDocument): Promise<void> => {
      await c.documents.insertOne(fromDocument(doc));
    },
    /** One page of a lane's rows (src/kernel/store/paging.ts). */
    page: async (workspaceId: string, s: DocumentScope, sort: KnowledgeSort, q: PageQuery) => {
      const p = await page(c.documents, scoped(workspaceId, s), sort, q);
      return { ...p, items: p.items.map(toDocument) };
    },
    /** Id, name and folder of up to `limit` rows (a lane's folder structure). */
    folderRows: (workspaceId: string, s: DocumentScope, limit: number) =>
      c.documents
        .find(scoped(workspaceId, s), { projection: { _id: 1, name: 1, path: 1 } })
        .limit(limit)
        .toArray() as Promise<{ _id: string; name: string; path: string }[]>,
    /** Rows of both lanes in (path, name) order, without their content (the resource tree). */
    async tree(workspaceId: string, s: DocumentScope, limit: number) {
      const rows = await c.documents
        .find(scoped(workspaceId, s), { projection: { content: 0, metadata: 0 } })
        .sort({ path: 1, name: 1 })
        .limit(limit)
        .toArray();
      return rows.map((r) => ({
        _id: r._id,
        lane: r.lane,
        name: r.name,
        path: r.path,
        brainId: r.brainId,
        updatedAt: r.updatedAt,
      }));
    },
    /**
     * Writes a new head when the stored one is older than `set.version` (when given), under the
     * row's hold; true when it changed.
     */
    setHead: (workspaceId: string, id: string, set: Partial<KnowledgeDocument>) =>
      update(
        c.documents,
        { _id: id, workspaceId, ...(set.version !== undefined ? { version: { $lt: set.version } } : {}) },
        encodeSet(set),
      ),
    /** Removes a row; its versions, chunks and recollection memberships go with `removeRelated`. */
    remove: async (workspaceId: string, id: string): Promise<void> => {
      await c.documents.deleteOne({ _id: id, workspaceId });
    },
    removeRelated: async (workspaceId: string, id: string): Promise<void> => {
      await Promise.all([
        c.versions.deleteMany({ documentId: id, workspaceId }),
        c.chunks.deleteMany({ resourceId: id, workspaceId }),
        c.members.deleteMany({ resourceId: id, workspaceId }),
      ]);
    },
    /** The lanes of those of `ids` that are rows of the brain. */
    lanesIn: async (workspaceId: string, brainId: string, ids: string[]) =>
      (
        await c.documents
          .find({ workspaceId, brainId, _id: { $in: ids } }, { projection: { _id: 1, lane: 1 } })
          .toArray()
      ).map((x) => ({ id: x._id, lane: x.lane })),
    countIn: (workspaceId: string, brainId: string, ids: string[]) =>
      c.documents.countDocuments({ workspaceId, brainId, _id: { $in: ids } }),

    // ---- versions ----
    /** The newest versions of a row, newest first (at most 500). */
    versions: async (workspaceId: string, id: string): Promise<DocumentVersion[]> =>
      (await c.versions.find({ documentId: id, workspaceId }).sort({ version: -1 }).limit(500).toArray()).map(
        toVersion,
      ),
    version: async (workspaceId: string, id: string, version: number): Promise<DocumentVersion | null> => {
      const v = await c.versions.findOne({ _id: `${id}:${version}`, workspaceId });
      return v && toVersion(v);
    },
    /** Records a version as it is (the first one; later ones are claimed with `claimVersion`). */
    recordVersion: async (v: DocumentVersion): Promise<void> => {
      await c.versions.insertOne(fromVersion(v));
    },
    /**
     * Claims the next version of a row: `build` gets the newest version (null before the first
     * claimed one) and returns the next, or null when there is nothing to change. Versions are
     * claimed by unique `_id` `<doc>:<version>` (src/kernel/store/claims.ts): a writer that loses the
     * number builds again on the new newest. Returns the claimed version, or null.
     */
    claimVersion: async (
      documentId: string,
      build: (previous: DocumentVersion | null) => DocumentVersion | null,
    ): Promise<DocumentVersion | null> => {
      const made = await claimNext(c.versions, { documentId }, 'version', (prev) => {
        const next = build(prev && toVersion(prev));
        return next && fromVersion(next);
      });
      return made && toVersion(made);
    },
  };
}
